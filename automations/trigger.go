package automations

import (
	"context"

	"github.com/relaybell/relaybell/store"
)

// CheckTrigger validates a trigger for website w as an automation's
// (Definition.Check) and puts it in its stored form: the one check of the
// trigger types, which journeys' entries reuse. A refusal is an *Error.
func CheckTrigger(ctx context.Context, w store.Website, lk Lookup, t *Trigger) error {
	d := Definition{Trigger: *t}
	if err := d.checkTrigger(ctx, w, lk); err != nil {
		return err
	}
	*t = d.Trigger
	return nil
}
