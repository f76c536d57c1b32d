-- Version 24: segment entry shared by automations and journeys (issue 32):
-- one membership table for every watcher of a segment.
--
-- segment_members: who is in the segment a watcher watches, as last
-- evaluated: a person enters when a change of theirs finds them in it
-- without a row here. watcher_id is the segment_entered automation's or
-- journey's id, and is repeated in automation_id or journey_id (exactly
-- one) so that the rows go with their watcher. Seeded with the segment's
-- members when the watcher starts watching it.
CREATE TABLE segment_members (
	watcher_id    TEXT NOT NULL,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	automation_id TEXT REFERENCES automations (id) ON DELETE CASCADE,
	journey_id    TEXT REFERENCES journeys (id) ON DELETE CASCADE,
	PRIMARY KEY (watcher_id, subscriber_id),
	CHECK ((automation_id IS NULL) <> (journey_id IS NULL))
){{.WithoutRowid}};
CREATE INDEX segment_members_automation ON segment_members (automation_id);
CREATE INDEX segment_members_journey ON segment_members (journey_id);
CREATE INDEX segment_members_person ON segment_members (subscriber_id);

INSERT INTO segment_members (watcher_id, subscriber_id, automation_id)
	SELECT automation_id, subscriber_id, automation_id FROM automation_segment_members;
DROP TABLE automation_segment_members;
