-- 021_stats.sql -- GET /v1/stats (src/db/db_stats.c) counts one tenant's reminders due in the
-- next hour and those fired in the last hour or day; reminders had no index led by the tenant,
-- so each count read the whole table. reminders_tenant_pending costs one entry per pending
-- reminder written and nothing at its fire (the fired row leaves the partial index's predicate);
-- reminders_tenant_fired costs one btree entry per fire, on the right-hand edge of the tenant's
-- range (fired_at grows).
CREATE INDEX reminders_tenant_pending ON reminders (tenant_id, fire_at) WHERE status = 'pending';
CREATE INDEX reminders_tenant_fired ON reminders (tenant_id, fired_at) WHERE status = 'fired';
