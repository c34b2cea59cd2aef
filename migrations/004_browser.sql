-- 004_browser.sql -- browsers as clients: signing keys for browser tokens, the organizer of a
-- meeting, and the live stream's events with their per-tenant sequence numbers.
--
-- Stream ids: the fire statement (db_fire.c) bumps stream_heads.seq of each tenant it fires for
-- and inserts that many stream_events rows with consecutive seq, in the same statement. The row
-- lock on the head is held until commit, so per tenant seq order is commit order: a reader that
-- has seen seq N has seen every event below N, and "seq > cursor" never skips a late commit (a
-- plain identity column would not give that: a lower id can commit after a higher one is read).

-- HS256 keys for browser tokens (JWT header kid = id). The secret is kept as text because HMAC
-- needs it, like webhook secrets; it is shown to the tenant once. Two live keys per tenant at most
-- (db_signing_key.c enforces it under a per-tenant lock).
CREATE TABLE signing_keys (
    id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    secret text NOT NULL CHECK (secret LIKE 'tsk\_%'),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX signing_keys_tenant_live ON signing_keys (tenant_id, created_at) WHERE revoked_at IS NULL;

-- The participant ids of a meeting as an array, derived from the participants JSON so that no
-- writer can forget it; indexed for "meetings where sub takes part" (browser tokens).
CREATE FUNCTION tocsin_participant_ids(p json) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(e ->> 'id'), '{}') FROM json_array_elements(p) AS e $$;

ALTER TABLE meetings
    ADD COLUMN organizer_id text CHECK (char_length(organizer_id) BETWEEN 1 AND 200),
    ADD COLUMN participant_ids text[] GENERATED ALWAYS AS (tocsin_participant_ids(participants)) STORED;
CREATE INDEX meetings_participant_ids ON meetings USING gin (participant_ids) WHERE deleted_at IS NULL;
CREATE INDEX meetings_organizer ON meetings (tenant_id, organizer_id, starts_at, id)
    WHERE deleted_at IS NULL AND organizer_id IS NOT NULL;

CREATE TABLE stream_heads (
    tenant_id bigint PRIMARY KEY REFERENCES tenants (id),
    seq bigint NOT NULL CHECK (seq >= 0),
    purged_through bigint NOT NULL DEFAULT 0 CHECK (purged_through >= 0) -- retention's high mark
);

-- One row per fired reminder occurrence that someone can see (audience: the meeting's participant
-- ids and its organizer when it fired). The body is built from the meeting when read, the same
-- way for every reader (codec_notification_encode), so it is not stored.
CREATE TABLE stream_events (
    tenant_id bigint NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 1),
    reminder_id bigint NOT NULL,
    fire_at timestamptz NOT NULL,
    fired_at timestamptz NOT NULL,
    meeting_id uuid NOT NULL,
    audience text[] NOT NULL CHECK (cardinality(audience) BETWEEN 1 AND 501),
    PRIMARY KEY (tenant_id, seq)
);
