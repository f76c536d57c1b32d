package sqlstore

import (
	"context"
	"fmt"

	"github.com/relaybell/relaybell/store"
)

const templateCols = `id, website_id, name, content, created_at, updated_at`

func templateDest(t *store.Template) []any {
	return []any{&t.ID, &t.WebsiteID, &t.Name, rawJSONDest{&t.Content}, timeDest{&t.CreatedAt}, timeDest{&t.UpdatedAt}}
}

// ListTemplates lists the website's templates, newest first.
func (s *Store) ListTemplates(ctx context.Context, websiteID string) ([]store.Template, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+templateCols+` FROM templates WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	list, err := CollectRows(rows, err, templateDest)
	if err != nil {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	return list, nil
}

// Template finds one of the website's templates.
func (s *Store) Template(ctx context.Context, websiteID, id string) (store.Template, error) {
	var t store.Template
	err := s.db.Read().QueryRow(ctx, `SELECT `+templateCols+` FROM templates WHERE website_id = $1 AND id = $2`,
		websiteID, id).Scan(templateDest(&t)...)
	if err != nil {
		return store.Template{}, fmt.Errorf("loading template: %w", s.mapErr(err))
	}
	return t, nil
}

// CreateTemplate stores a new template.
func (s *Store) CreateTemplate(ctx context.Context, t store.Template) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO templates (id, website_id, name, content, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		t.ID, t.WebsiteID, t.Name, string(t.Content), s.now(t.CreatedAt), s.now(t.UpdatedAt))
	if err != nil {
		return fmt.Errorf("creating template: %w", s.mapErr(err))
	}
	return nil
}

// UpdateTemplate replaces a template's name and content.
func (s *Store) UpdateTemplate(ctx context.Context, t store.Template) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE templates SET name = $3, content = $4, updated_at = $5
		WHERE website_id = $1 AND id = $2`,
		t.WebsiteID, t.ID, t.Name, string(t.Content), s.now(t.UpdatedAt))); err != nil {
		return fmt.Errorf("updating template: %w", s.mapErr(err))
	}
	return nil
}

// DeleteTemplate removes a template nothing names, reading its uses in
// the delete's transaction.
func (s *Store) DeleteTemplate(ctx context.Context, websiteID, id string) ([]store.TemplateUse, error) {
	var uses []store.TemplateUse
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var err error
		if uses, err = s.templateUses(ctx, tx, websiteID, id); err != nil {
			return err
		}
		if len(uses) > 0 {
			return store.ErrConflict
		}
		return affected(tx.Exec(ctx, `DELETE FROM templates WHERE website_id = $1 AND id = $2`, websiteID, id))
	})
	if err != nil {
		return uses, fmt.Errorf("deleting template: %w", s.mapErr(err))
	}
	return nil, nil
}

// TemplateUses lists what names the website's template.
func (s *Store) TemplateUses(ctx context.Context, websiteID, templateID string) ([]store.TemplateUse, error) {
	uses, err := s.templateUses(ctx, s.db.Read(), websiteID, templateID)
	if err != nil {
		return nil, fmt.Errorf("finding template uses: %w", err)
	}
	return uses, nil
}

// templateUses finds the definitions that name the template: the JSON
// text the automations and journeys packages write holds
// "templateId":"<id>" (ids are stored in their canonical form, so the
// text matches exactly; a UUID holds no LIKE wildcard). Each kind is one
// UNION ALL branch, so that another kind (feeds, schedules) is one more.
func (s *Store) templateUses(ctx context.Context, c Conn, websiteID, templateID string) ([]store.TemplateUse, error) {
	rows, err := c.Query(ctx, `SELECT kind, id, name FROM (
		SELECT '`+store.TemplateUseAutomation+`' AS kind, a.id AS id, a.name AS name FROM automations a
		WHERE a.website_id = $1 AND CAST(a.definition AS TEXT) LIKE $2
		UNION ALL
		SELECT '`+store.TemplateUseJourney+`', j.id, j.name FROM journeys j
		WHERE j.website_id = $1 AND EXISTS (SELECT 1 FROM journey_versions v
			WHERE v.journey_id = j.id AND CAST(v.definition AS TEXT) LIKE $2)
		UNION ALL
		SELECT '`+store.TemplateUseSchedule+`', s.id, s.name FROM schedules s
		WHERE s.website_id = $1 AND s.template_id = $3
		UNION ALL
		SELECT '`+store.TemplateUseWelcome+`', w.website_id, 'Welcome notification' FROM site_settings w
		WHERE w.website_id = $1 AND w.name = '`+store.SettingsWelcome+`' AND w.body LIKE $2
		UNION ALL
		SELECT '`+store.TemplateUseFeed+`', f.id, f.name FROM feeds f
		WHERE f.website_id = $1 AND f.template_id = $3
	) uses ORDER BY kind, name, id`, websiteID, `%"templateId":"`+templateID+`"%`, templateID)
	list, err := CollectRows(rows, err, func(u *store.TemplateUse) []any { return []any{&u.Kind, &u.ID, &u.Name} })
	if err != nil {
		return nil, err
	}
	return list, nil
}
