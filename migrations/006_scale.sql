-- 006_scale.sql -- replicas share the engine's work instead of repeating it (src/shard.h,
-- src/members.c). Each replica writes a heartbeat here every few hundred milliseconds, by the
-- database's clock; the live ones split the shards (reminder id % 256) among themselves by
-- rendezvous hashing, and each reads, claims, sweeps and repairs only its own shards. The index
-- makes an owner's reads cost its own rows, not every replica's.

CREATE TABLE replicas (
    instance_id text PRIMARY KEY CHECK (char_length(instance_id) BETWEEN 1 AND 128),
    heartbeat_at timestamptz NOT NULL,
    joined_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX reminders_pending_shard ON reminders ((id % 256), fire_at, id) WHERE status = 'pending';
