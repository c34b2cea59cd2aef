-- 009_retention.sql -- what retention (src/retention.c) needs to find old rows without reading
-- young ones: one index per purged kind, on the time that ages it. Partial where only some rows
-- ever age out, so rows still moving (pending deliveries, live meetings) never enter them.
-- Plain CREATE INDEX: a migration runs in one transaction (CONCURRENTLY cannot); on a large
-- existing outbox it blocks writes to that table while it builds.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX outbox_done_created ON outbox (created_at) WHERE status IN ('delivered', 'failed');
CREATE INDEX meetings_deleted ON meetings (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX stream_events_fired ON stream_events (fired_at);
