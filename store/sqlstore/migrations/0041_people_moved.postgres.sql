-- Version 41, PostgreSQL's alone: a transaction that moves the people
-- version also leaves a mark on its connection, outliving its commit
-- (a setting of the session, not of the transaction; it is undone if the
-- transaction rolls back). The store reads and clears the mark in the
-- round trip of the COMMIT, and a transaction that moved the version
-- returns only once every node's lease on the version it read before has
-- run out (PeopleLease in store/postgres): the nodes' person caches need not read the
-- version for every batch of lookups.
CREATE OR REPLACE FUNCTION people_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('relaybell.people_version_moved', true) IS DISTINCT FROM txid_current()::text THEN
		UPDATE people_version SET version = version + 1;
		PERFORM set_config('relaybell.people_version_moved', txid_current()::text, true);
		PERFORM set_config('relaybell.people_moved', 'y', false);
	END IF;
	RETURN NULL;
END
$$;
