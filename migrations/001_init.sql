-- 001_init.sql -- tenants, API keys, meetings, their reminders and stored idempotent responses.
-- Applied by db_migrate in one transaction; the limits mirror src/meeting.h and src/db.h so a
-- bug in the codec cannot store what the API promises never to return.
-- participants and metadata are json, not jsonb: json keeps the exact compact text the codec
-- wrote (key order included), so a meeting reads back byte-for-byte as it was created.

CREATE TABLE tenants (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 100),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    prefix text NOT NULL UNIQUE CHECK (char_length(prefix) BETWEEN 1 AND 32),
    key_hash bytea NOT NULL CHECK (octet_length(key_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE meetings (
    id uuid PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    description text CHECK (char_length(description) <= 5000),
    starts_at timestamptz NOT NULL,
    ends_at timestamptz CHECK (ends_at > starts_at),
    time_zone text CHECK (octet_length(time_zone) BETWEEN 1 AND 64),
    location text CHECK (char_length(location) <= 500),
    participants json NOT NULL
        CHECK (json_typeof(participants) = 'array' AND json_array_length(participants) <= 500),
    metadata json CHECK (json_typeof(metadata) = 'object' AND octet_length(metadata::text) <= 16384),
    version bigint NOT NULL CHECK (version >= 1),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    deleted_at timestamptz
);

-- Listing pages through live meetings by (starts_at, id) within one tenant.
CREATE INDEX meetings_tenant_starts_live ON meetings (tenant_id, starts_at, id)
    WHERE deleted_at IS NULL;

CREATE TABLE reminders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    meeting_id uuid NOT NULL REFERENCES meetings (id) ON DELETE CASCADE,
    tenant_id bigint NOT NULL,
    minutes_before int NOT NULL CHECK (minutes_before BETWEEN 0 AND 40320),
    fire_at timestamptz NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'fired', 'missed', 'cancelled')),
    fired_at timestamptz,
    UNIQUE (meeting_id, minutes_before)
);

-- The mirror and the repair loop walk pending reminders in fire order; only those are indexed
-- so the index stays as small as the pending set.
CREATE INDEX reminders_pending_fire ON reminders (fire_at, id) WHERE status = 'pending';

CREATE TABLE idempotency_keys (
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    key text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    request_hash text NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    status int NOT NULL CHECK (status BETWEEN 100 AND 599),
    body text NOT NULL,
    location text,
    etag text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);
