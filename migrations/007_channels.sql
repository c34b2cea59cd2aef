-- 007_channels.sql -- reminders reach people (DESIGN.md section 8): each reminder names its
-- channels, and the outbox holds one row per channel and target of each fired occurrence, each
-- with its own attempts, backoff and failed state: webhook (a tenant's receiver), stream (written
-- with the fire, so recorded delivered at once), push (a participant's Web Push subscription) and
-- email (a participant with an address). receiver is what delivery isolates on: a webhook, a push
-- service's origin, the SMTP server.

-- Bits: 1 webhook, 2 stream, 4 push, 8 email (src/meeting.h); the default is all but email.
ALTER TABLE reminders ADD COLUMN channels smallint NOT NULL DEFAULT 7 CHECK (channels BETWEEN 1 AND 15);

-- One VAPID key pair per tenant, made on first use and never rotated silently (a new key breaks
-- every subscription made with the old one).
CREATE TABLE vapid_keys (
    tenant_id bigint PRIMARY KEY REFERENCES tenants (id),
    private_key text NOT NULL CHECK (char_length(private_key) BETWEEN 1 AND 200),
    public_key text NOT NULL CHECK (char_length(public_key) = 87), -- base64url of 65 bytes
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE push_subscriptions (
    id uuid PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    participant_id text NOT NULL CHECK (char_length(participant_id) BETWEEN 1 AND 200),
    endpoint text NOT NULL CHECK (char_length(endpoint) BETWEEN 1 AND 2048),
    origin text NOT NULL CHECK (char_length(origin) BETWEEN 1 AND 2048),
    p256dh text NOT NULL CHECK (char_length(p256dh) = 87),
    auth text NOT NULL CHECK (char_length(auth) = 22),
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, endpoint)
);
CREATE INDEX push_subscriptions_participant ON push_subscriptions (tenant_id, participant_id);

ALTER TABLE outbox ALTER COLUMN webhook_id DROP NOT NULL;
ALTER TABLE outbox
    ADD COLUMN target text,
    ADD COLUMN receiver text,
    ADD COLUMN push_subscription_id uuid,
    ADD COLUMN recipient text,
    ADD COLUMN address text;
UPDATE outbox SET target = webhook_id::text, receiver = webhook_id::text;
ALTER TABLE outbox ALTER COLUMN target SET NOT NULL, ALTER COLUMN receiver SET NOT NULL;
ALTER TABLE outbox DROP CONSTRAINT outbox_channel_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_channel_check
    CHECK (channel IN ('webhook', 'stream', 'push', 'email'));
ALTER TABLE outbox DROP CONSTRAINT outbox_reminder_id_fire_at_webhook_id_key;
CREATE UNIQUE INDEX outbox_occurrence_target ON outbox (reminder_id, fire_at, channel, target);
