-- 002_delivery.sql -- webhook receivers and the outbox of notifications to deliver.
-- The fire transaction (db_fire.c) inserts one outbox row per live webhook of the tenant, leased
-- to the replica that fired so its delivery workers send at once; rows whose lease ran out (a
-- crashed replica) are picked up by any replica's retry poller. Nothing is ever sent without a
-- row here first, so a restart resumes every pending delivery.

CREATE TABLE webhooks (
    id uuid PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    url text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    description text CHECK (char_length(description) <= 500),
    secret text NOT NULL CHECK (secret LIKE 'whsec\_%'),
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);

CREATE INDEX webhooks_tenant_live ON webhooks (tenant_id, created_at) WHERE deleted_at IS NULL;

CREATE TABLE outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id bigint NOT NULL,
    meeting_id uuid NOT NULL,
    reminder_id bigint NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    fire_at timestamptz NOT NULL, -- with reminder_id: the occurrence, and the webhook-id
    channel text NOT NULL DEFAULT 'webhook' CHECK (channel IN ('webhook')),
    webhook_id uuid NOT NULL REFERENCES webhooks (id),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_owner text,
    lease_until timestamptz,
    payload text, -- the body, fixed at the first attempt so every retry sends the same bytes
    last_error text CHECK (char_length(last_error) <= 500),
    last_status int,
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (reminder_id, fire_at, webhook_id)
);

-- The retry poller walks due pending rows; the deliveries endpoint reads by meeting.
CREATE INDEX outbox_pending_due ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_meeting ON outbox (meeting_id, id);
