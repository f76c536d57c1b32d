-- Version 10: the audience list's external-id search (q) through a
-- trigram index instead of reading every subscriber.
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension, so a
-- database owner may create it. Where it cannot be created the search still
-- works, reading every subscriber as before. It goes into public, once per
-- database, so that dropping a store's schema never drops it.
DO $$
BEGIN
	CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'pg_trgm unavailable (%): the external-id search reads every subscriber', SQLERRM;
END $$;

DO $$
DECLARE
	ops text;
BEGIN
	SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO ops
	FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace
	WHERE x.extname = 'pg_trgm';
	IF ops IS NOT NULL THEN
		EXECUTE 'CREATE INDEX subscribers_external_id_trgm ON subscribers USING gin (lower(external_id) ' || ops || ')';
	END IF;
END $$;
