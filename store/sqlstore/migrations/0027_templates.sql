-- Version 30: templates (issue 35, part 1; store.Templates).
--
-- templates: a website's saved content, a name and the content members of
-- a send request (title, body, url, icon, image, badge, actions, ttl, tag,
-- requireInteraction, translations) as the JSON object the templates
-- package writes, kept as written. Automations' messages and journeys'
-- send steps name a template by id inside their definitions; the store
-- finds those uses by that text (TemplateUses).
CREATE TABLE templates (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	content    {{.JSON}} NOT NULL,
	created_at {{.Time}} NOT NULL,
	updated_at {{.Time}} NOT NULL
);
CREATE INDEX templates_website ON templates (website_id, created_at);
