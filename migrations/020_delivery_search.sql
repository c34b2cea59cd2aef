-- 020_delivery_search.sql -- the operator's tenant-wide delivery search (GET /v1/deliveries,
-- src/db/db_delivery.c): newest first within a tenant and a status, and q, a case-insensitive
-- substring of the meeting's title, the recipient or the last error.
--
-- outbox_tenant_status walks one tenant's rows of one status from the newest down and stops at
-- the page's limit; a search without a status walks each status's range and merges them. An
-- outbox write already updates every index of the table (the partial indexes' predicates name
-- status, so no update of a row is HOT): this index is one more btree entry per write, on the
-- right-hand edge of its tenant's range.
--
-- q's titles come from meetings_title_trgm, a trigram index (pg_trgm, in PostgreSQL's own
-- contrib: Debian's postgresql-15 package ships it; trusted since PostgreSQL 13, so the
-- database's owner may create it without being a superuser): the matching meetings are found
-- once per search and the walk above keeps the rows of those meetings or whose recipient or last
-- error hold q. The outbox itself has no trigram index: a GIN entry per written row, on the
-- delivery's hottest path, for columns that are mostly NULL (a delivered webhook row has neither).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX outbox_tenant_status ON outbox (tenant_id, status, id);
CREATE INDEX meetings_title_trgm ON meetings USING gin (title gin_trgm_ops);

-- Each attempt of a delivery (GET /v1/deliveries/{id}), written by the statement that records
-- its outcome in the outbox (src/db/db_outbox.c), so the two never disagree: n is the row's
-- attempt count after it, outcome the attempt's own (a failed attempt of a row that will be
-- retried is 'failed'), instance the replica that sent it (TOCSIN_INSTANCE_ID), webhook_id the
-- webhook of a webhook row (its health, GET /v1/webhooks, along delivery_attempts_webhook: counts
-- of the last hour and the latest of each outcome, each a short walk). A row keeps its
-- DB_DELIVERY_ATTEMPTS_MAX (20) newest: the statement that writes the 21st deletes the oldest.
-- No key to the outbox: it would lock each outbox row once more at every record, and the outbox
-- rows go by several statements (retention, meeting deletes); retention purges attempts by their
-- own age instead, with the outbox's (TOCSIN_RETENTION_DELIVERIES_S), along the BRIN index of
-- at (rows arrive in time order, so a few block ranges cover a batch and a write costs little).
CREATE TABLE delivery_attempts (
    outbox_id bigint NOT NULL,
    webhook_id uuid,
    n int NOT NULL CHECK (n >= 1),
    at timestamptz NOT NULL DEFAULT now(),
    outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed')),
    http_status int CHECK (http_status BETWEEN 1 AND 999),
    duration_ms int NOT NULL CHECK (duration_ms >= 0),
    error text CHECK (char_length(error) <= 500),
    instance text NOT NULL CHECK (char_length(instance) BETWEEN 1 AND 128)
);
CREATE INDEX delivery_attempts_outbox ON delivery_attempts (outbox_id, n);
CREATE INDEX delivery_attempts_at ON delivery_attempts USING brin (at);
CREATE INDEX delivery_attempts_webhook ON delivery_attempts (webhook_id, outcome, at)
    WHERE webhook_id IS NOT NULL;

-- A webhook an operator turned off (PATCH /v1/webhooks/{id} {"disabled": true}): its reminders
-- still write their outbox rows, which delivery records failed ("webhook disabled") without a
-- request, so that once it is on again POST /v1/webhooks/{id}/recover sends what it missed.
ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz;

-- A secret's rotation (POST /v1/webhooks/{id}/rotate-secret): the secret it replaced signs
-- beside the new one until previous_until (TOCSIN_WEBHOOK_ROTATE_OVERLAP_S), so receivers can
-- move to the new secret without losing a request.
ALTER TABLE webhooks ADD COLUMN previous_secret text CHECK (previous_secret LIKE 'whsec\_%'),
    ADD COLUMN previous_until timestamptz;
