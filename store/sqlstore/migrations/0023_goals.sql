-- Version 23: goals (issue 32, item 4; store.Goals) and the automations'
-- pending triggers (store.Automations.PendingTriggers).
--
-- goals: a website's goals, an event name or a label reaching a value
-- (exactly one), and the window in hours within which a send the person
-- received is credited with it.
CREATE TABLE goals (
	id           TEXT PRIMARY KEY,
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	event        TEXT,
	tag_name     TEXT,
	tag_value    TEXT,
	window_hours INTEGER NOT NULL,
	created_at   {{.Time}} NOT NULL,
	updated_at   {{.Time}} NOT NULL,
	CHECK ((event IS NULL) <> (tag_name IS NULL))
);
CREATE INDEX goals_website ON goals (website_id, created_at);
CREATE INDEX goals_event ON goals (website_id, event);

-- goal_reaches: each time a person reached a goal, once per (goal, key):
-- the event's id, or a tag change's own id. notification_id is the send
-- credited (NULL: none within the window), source and source_id what it
-- was sent for (automation, journey or the notification itself), taken
-- from the notification when the reach was recorded.
CREATE TABLE goal_reaches (
	goal_id         TEXT NOT NULL REFERENCES goals (id) ON DELETE CASCADE,
	reach_key       TEXT NOT NULL,
	subscriber_id   TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	notification_id TEXT,
	source          TEXT,
	source_id       TEXT,
	value           {{.Float}} NOT NULL,
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (goal_id, reach_key)
){{.WithoutRowid}};

-- goal_tag_members: who has a tag goal's label value, as last seen: a
-- person found with it and no row here reaches the goal. Recorded when the
-- goal is created or changed, so that those who had it already do not.
CREATE TABLE goal_tag_members (
	goal_id       TEXT NOT NULL REFERENCES goals (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (goal_id, subscriber_id)
){{.WithoutRowid}};

-- automation_triggers: subscribed and topic_opt_in triggers recorded in
-- the transaction of the registration or import that caused them, done
-- (and removed) by the automations Service after it: a request that dies
-- between the two leaves the row for the person's next registration (the
-- SDK registers on every page view) or the next import.
CREATE TABLE automation_triggers (
	id            TEXT PRIMARY KEY,
	website_id    TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	trigger_type  TEXT NOT NULL,
	topic_id      TEXT,
	at            {{.Time}} NOT NULL
);
CREATE INDEX automation_triggers_person ON automation_triggers (subscriber_id, at);
CREATE INDEX automation_triggers_website ON automation_triggers (website_id, at);
