-- bench/deliveries_seed.sql -- the data of bench/deliveries.sh, written by SQL alone: :tenants
-- tenants (bench_t1 ..), 1,000 past meetings each with one fired reminder (fired over the last
-- 24 hours, 86 s apart, 0-99 ms late) and titles of three words from a list of 500, two webhooks
-- each, and :rows outbox rows spread over them in turn, each failed one with its last attempt:
-- 90% delivered, 8% failed with one of five last errors, 2% pending but due in a year (the server
-- under test leaves them alone), mixed by a hash of the row's number. Fire times step back 10 ms a row from now, so ids and times
-- agree, as they do when reminders fire. The outbox's indexes are dropped for the load and made
-- again from their own definitions (pg_indexes), then everything is analyzed.
\set ON_ERROR_STOP 1
SET synchronous_commit = off;
SET maintenance_work_mem = '1GB';

INSERT INTO tenants (name) SELECT 'bench_t' || t FROM generate_series(1, :tenants) t
    ON CONFLICT (name) DO NOTHING;

CREATE TEMP TABLE bench_tenants AS
    SELECT substr(name, 8)::int AS n, id FROM tenants WHERE name ~ '^bench_t[0-9]+$';

CREATE TEMP TABLE words AS
    SELECT i, w FROM unnest(ARRAY['alpha','budget','cadence','design','exec','finance','growth',
        'hiring','infra','jam','kickoff','legal','market','north','ops','planning','quarterly',
        'review','sales','team','update','vendor','weekly','xray','yearly','zonal']) WITH ORDINALITY AS x(w, i);
-- 500 words: the 26 above and 474 made up ones (wordNNN), so a word matches ~0.6% of titles.
INSERT INTO words SELECT 26 + n, 'word' || lpad(n::text, 3, '0') FROM generate_series(1, 474) n;

CREATE TEMP TABLE bench_meetings AS
    SELECT t.id AS tenant_id, k, gen_random_uuid() AS id,
           initcap((SELECT w FROM words WHERE i = 1 + (k * 7 + t.id) % 500)) || ' '
               || (SELECT w FROM words WHERE i = 1 + (k * 13 + t.id * 3) % 500) || ' '
               || (SELECT w FROM words WHERE i = 1 + (k * 31 + t.id * 11) % 500) AS title
    FROM tenants t CROSS JOIN generate_series(0, 999) k WHERE t.name LIKE 'bench\_t%';

INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
    SELECT id, tenant_id, title, now() - interval '1 day', '[]', 1, now() - interval '2 days',
           now() - interval '2 days' FROM bench_meetings;
CREATE TEMP TABLE bench_reminders AS
    WITH r AS (INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, fired_at)
        SELECT id, tenant_id, 5, now() - k * interval '86 seconds',
               'fired', now() - k * interval '86 seconds' + (k % 100) * interval '1 millisecond'
        FROM bench_meetings RETURNING id, meeting_id)
    SELECT m.tenant_id, m.k, m.id AS meeting_id, r.id AS reminder_id
    FROM r JOIN bench_meetings m ON m.id = r.meeting_id;
CREATE INDEX ON bench_reminders (tenant_id, k);

CREATE TEMP TABLE bench_hooks AS
    SELECT t.id AS tenant_id, h, gen_random_uuid() AS id FROM tenants t CROSS JOIN generate_series(0, 1) h
    WHERE t.name LIKE 'bench\_t%';
INSERT INTO webhooks (id, tenant_id, url, secret)
    SELECT id, tenant_id, 'https://hooks.invalid/' || h, 'whsec_YmVuY2hiZW5jaGJlbmNoYmVuY2g='
    FROM bench_hooks;

CREATE TEMP TABLE outbox_indexes AS
    SELECT indexname, indexdef FROM pg_indexes
    WHERE tablename = 'outbox' AND indexname <> 'outbox_pkey';
SELECT format('DROP INDEX %I', indexname) FROM outbox_indexes \gexec

-- Row g: tenant 1 + g % T, meeting (g / T) % 1000 of it, webhook (g / T / 1000) % 2, fire time
-- 10 ms a row back from now (newest = largest g); its status and error from a multiplicative hash
-- of g (x below), so that they follow neither the tenant nor the meeting.
INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, webhook_id, target,
                    receiver, status, attempts, next_attempt_at, last_error, last_status,
                    created_at, delivered_at)
SELECT r.tenant_id, r.meeting_id, r.reminder_id, ts, 'webhook', hk.id, hk.id::text, hk.id::text,
       CASE WHEN x % 50 = 0 THEN 'pending' WHEN x % 50 < 5 THEN 'failed' ELSE 'delivered' END,
       CASE WHEN x % 50 = 0 THEN 1 WHEN x % 50 < 5 THEN 8 ELSE 1 END,
       CASE WHEN x % 50 = 0 THEN now() + interval '1 year' ELSE ts END,
       CASE WHEN x % 50 = 0 THEN 'HTTP 503'
            WHEN x % 50 < 5 THEN (ARRAY['HTTP 500', 'HTTP 502', 'connection refused',
                 'timed out after 10000 ms', 'HTTP 410'])[1 + (x / 50) % 5] END,
       CASE WHEN x % 50 = 0 THEN 503
            WHEN x % 50 < 5 THEN NULLIF((ARRAY[500, 502, 0, 0, 410])[1 + (x / 50) % 5], 0)
            ELSE 204 END,
       ts, CASE WHEN x % 50 >= 5 THEN ts END
FROM (SELECT g, now() - (:rows - g) * interval '10 milliseconds' AS ts,
             ((g * 2654435761) % 4294967296) / 65536 AS x
      FROM generate_series(1::bigint, :rows) g) s
JOIN bench_tenants bt ON bt.n = 1 + s.g % :tenants
JOIN bench_reminders r ON r.tenant_id = bt.id AND r.k = (s.g / :tenants) % 1000
JOIN bench_hooks hk ON hk.tenant_id = bt.id AND hk.h = (s.g / :tenants / 1000) % 2;

SELECT indexdef FROM outbox_indexes \gexec
-- A failed row's last attempt (GET /v1/stats counts failures by it), a minute after its fire
-- time, in the order of time as the delivery path appends them.
INSERT INTO delivery_attempts (outbox_id, webhook_id, n, at, outcome, http_status, duration_ms,
                               error, instance)
SELECT id, webhook_id, attempts, fire_at + interval '1 minute', 'failed', last_status, 100,
       last_error, 'bench'
FROM outbox WHERE status = 'failed' ORDER BY id;
VACUUM ANALYZE delivery_attempts;
VACUUM ANALYZE outbox;
VACUUM ANALYZE meetings;
VACUUM ANALYZE reminders;
