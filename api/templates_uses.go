package api

import (
	"errors"
	"fmt"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// brokenUse is a thing that names a template and whose content a change
// to it would leave unsendable, with why.
type brokenUse struct {
	use store.TemplateUse
	why string
}

// brokenUses lists what names the stored template t's id and would break
// if t were stored: each use's content is checked, as saving that use
// checks it, with t's content filled in (templates.With), and a use is
// broken when that check refuses it and the same check with the template
// as stored now passes (what was broken already is not this change's
// doing). A feed never breaks: it fills every member a template leaves
// out from its items, and saving it only checks the template exists.
func (a *API) brokenUses(r *request, t store.Template) ([]brokenUse, error) {
	uses, err := a.st.TemplateUses(r.ctx, t.WebsiteID, t.ID)
	if err != nil || len(uses) == 0 {
		return nil, err
	}
	w := r.owner.Website
	before, after := templates.Lookup(a.st), templates.With(a.st, t)
	var broken []brokenUse
	for _, u := range uses {
		checks, err := a.useChecks(r, w, u)
		if err != nil {
			return nil, err
		}
		for _, check := range checks {
			why, err := breaks(check, before, after)
			if err != nil {
				return nil, fmt.Errorf("checking %s %s with the changed template: %w", u.Kind, u.ID, err)
			}
			if why != "" {
				broken = append(broken, brokenUse{u, why})
				break
			}
		}
	}
	return broken, nil
}

// useCheck checks one use's content with its templates read from lk: a
// refusal (useRefusal) or the store's error.
type useCheck func(lk templates.Lookup) error

// useChecks are the checks of a use's content: an automation's messages,
// each version of a journey (an enrolment may still run an older one), a
// schedule's occurrence, the welcome notification.
func (a *API) useChecks(r *request, w store.Website, u store.TemplateUse) ([]useCheck, error) {
	switch u.Kind {
	case store.TemplateUseAutomation:
		au, err := a.st.Automation(r.ctx, w.ID, u.ID)
		if err != nil {
			return nil, err
		}
		d, err := automations.Decode(au)
		if err != nil {
			return nil, err
		}
		return []useCheck{func(lk templates.Lookup) error { return d.CheckMessages(r.ctx, w, lk, r.now) }}, nil
	case store.TemplateUseJourney:
		j, err := a.st.Journey(r.ctx, w.ID, u.ID)
		if err != nil {
			return nil, err
		}
		var checks []useCheck
		for v := 1; v <= j.Version; v++ {
			raw, err := a.st.JourneyVersion(r.ctx, j.ID, v)
			if err != nil {
				return nil, err
			}
			d, err := journeys.DecodeVersion(j.ID, v, raw)
			if err != nil {
				return nil, err
			}
			checks = append(checks, func(lk templates.Lookup) error { return d.CheckSends(r.ctx, w, lk, r.now) })
		}
		return checks, nil
	case store.TemplateUseSchedule:
		if a.schedules == nil {
			return nil, nil
		}
		sc, err := a.st.Schedule(r.ctx, w.ID, u.ID)
		if err != nil {
			return nil, err
		}
		return []useCheck{func(lk templates.Lookup) error {
			return a.schedules.CheckSend(r.ctx, w, sc, templates.NewService(lk), r.now)
		}}, nil
	case store.TemplateUseWelcome:
		wel, err := a.welcome(r, a.st.SiteSettings, w.ID)
		if err != nil {
			return nil, err
		}
		return []useCheck{func(lk templates.Lookup) error { return wel.Check(r.ctx, w, templates.NewService(lk), r.now) }}, nil
	}
	return nil, nil
}

// breaks runs check with the template as it would be (after) and, when
// that refuses, as it is (before): the refusal's message when only the
// change refuses, "" otherwise.
func breaks(check useCheck, before, after templates.Lookup) (string, error) {
	err := check(after)
	if err == nil {
		return "", nil
	}
	why, refused := useRefusal(err)
	if !refused {
		return "", err
	}
	if err := check(before); err == nil {
		return why, nil
	} else if _, refused := useRefusal(err); !refused {
		return "", err
	}
	return "", nil
}

// useRefusal is err's message when it is the refusal of a use's content
// by its package's check, not the store's error.
func useRefusal(err error) (string, bool) {
	var (
		ae *automations.Error
		je *journeys.Error
		se *schedules.Error
		oe *onsite.Error
		ne *notification.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae.Message, true
	case errors.As(err, &je):
		return je.Message, true
	case errors.As(err, &se):
		return se.Message, true
	case errors.As(err, &oe):
		return oe.Message, true
	case errors.As(err, &ne):
		return ne.Message, true
	}
	return "", false
}
