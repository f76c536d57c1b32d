-- PostgreSQL's block of 0040_endpoint_language.sql: the trigger functions
-- and their triggers. A new or moved endpoint takes its subscriber's
-- language before it is written (a BEFORE trigger sets the row itself).
-- A registration locks its endpoint, then its subscriber; when that
-- changes the language, the trigger then locks the person's other
-- endpoints. Two browsers of one person registering at once in two
-- languages can so deadlock; PostgreSQL ends one, and the store runs it
-- again (Store.inTx).
{{define "sync"}}
CREATE FUNCTION endpoints_language_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.language := coalesce((SELECT language FROM subscribers WHERE id = NEW.subscriber_id), '');
	RETURN NEW;
END
$$;

CREATE TRIGGER endpoints_language_insert BEFORE INSERT ON endpoints
	FOR EACH ROW EXECUTE FUNCTION endpoints_language_take();
CREATE TRIGGER endpoints_language_move BEFORE UPDATE OF subscriber_id ON endpoints
	FOR EACH ROW WHEN (NEW.subscriber_id IS DISTINCT FROM OLD.subscriber_id) EXECUTE FUNCTION endpoints_language_take();

CREATE FUNCTION subscribers_language_give() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE endpoints SET language = NEW.language WHERE subscriber_id = NEW.id;
	RETURN NULL;
END
$$;

CREATE TRIGGER subscribers_language_change AFTER UPDATE OF language ON subscribers
	FOR EACH ROW WHEN (NEW.language IS DISTINCT FROM OLD.language) EXECUTE FUNCTION subscribers_language_give();
{{end}}
