-- bench/create.sql -- pgbench script for bench/create.sh: PostgreSQL's own rate for what one
-- POST /v1/meetings writes, in the same shape as db_meeting_insert (src/db/db_meeting.c): one
-- statement whose CTE inserts the meeting and whose outer INSERT adds its 2 reminder rows.
-- Needs -D tenant=<tenants.id>. Same body as bench/create.lua: 3 participants, 2 reminders, 2 h ahead.
WITH m AS (
    INSERT INTO meetings (id, tenant_id, title, description, starts_at, ends_at, time_zone,
                          location, participants, metadata, version, created_at, updated_at)
    VALUES (gen_random_uuid(), :tenant, 'Benchmark sync', NULL,
            date_trunc('second', now()) + interval '2 hours', NULL, NULL, NULL,
            '[{"id":"u1","name":"Ada","email":"ada@example.com"},{"id":"u2","name":"Grace","email":"grace@example.com"},{"id":"u3","name":"Edsger","email":"edsger@example.com"}]'::json,
            NULL, 1, now(), now())
    RETURNING id, tenant_id, starts_at)
INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, fired_at)
SELECT m.id, m.tenant_id, r.mb, m.starts_at - r.mb * interval '1 minute', 'pending', NULL
FROM m, unnest(ARRAY[10, 5]) AS r(mb)
RETURNING id, minutes_before;
