-- 017_stream_audience.sql -- a participant's stream events found by an index (issue 35, N3).
-- The inbox and a stream resume read one participant's events of one tenant; without an index on
-- the audience they walked the tenant's whole (tenant_id, seq) range and tested every row, so a
-- participant in no event cost a scan of every event kept (1.5 s at 1,000,000).
--
-- The index is a GIN over "tenant/participant" keys rather than over audience itself: participant
-- ids are the tenants' own (u1, alice), and an index on audience alone would make one tenant's
-- reads of "alice" walk every other tenant's "alice" events too. Queries must name the expression
-- exactly as here (db_stream.c): tocsin_audience_keys(tenant_id, audience) @> ARRAY[key], key
-- made by tocsin_audience_key. Not inlined by the planner (the body has a FROM), which is what
-- keeps the index's expression and the query's the same tree.
-- Plain CREATE INDEX (a migration is one transaction): on a large stream_events it blocks the
-- fires' inserts while it builds (about 30 s for 1,000,000 events of 30 participants here), longer
-- than the connection's statement timeout (DB_STATEMENT_TIMEOUT_MS), which this transaction lifts.
SET LOCAL statement_timeout = 0;
CREATE FUNCTION tocsin_audience_key(tenant bigint, participant text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT tenant::text || '/' || participant $$;

CREATE FUNCTION tocsin_audience_keys(tenant bigint, audience text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT array_agg(tocsin_audience_key(tenant, a)) FROM unnest(audience) AS a $$;

CREATE INDEX stream_events_audience ON stream_events USING gin (tocsin_audience_keys(tenant_id, audience));
