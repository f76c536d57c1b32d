-- Version 25: an automation's run counts leave its row (issue 32).
--
-- Every trigger added one to automations.triggered: the triggers of a
-- popular automation all waited for that one row's lock, one commit after
-- another (BenchmarkTriggerOneAutomation: hot-row against sharded).
-- automation_counts spreads them over Dialect.CounterShards rows per
-- automation, the shard picked by the person: the stats are the shards'
-- sums, exact as before.
CREATE TABLE automation_counts (
	automation_id TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
	shard         INTEGER NOT NULL,
	triggered     {{.Bigint}} NOT NULL DEFAULT 0,
	stopped       {{.Bigint}} NOT NULL DEFAULT 0,
	PRIMARY KEY (automation_id, shard)
){{.WithoutRowid}};
INSERT INTO automation_counts (automation_id, shard, triggered, stopped)
	SELECT id, 0, triggered, stopped FROM automations WHERE triggered > 0 OR stopped > 0;
ALTER TABLE automations DROP COLUMN triggered;
ALTER TABLE automations DROP COLUMN stopped;
