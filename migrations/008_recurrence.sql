-- 008_recurrence.sql -- recurring meetings (DESIGN.md section 9). A series is a meeting with a
-- row in series: its rule, exdates and rdates, and its reminders' definitions (a single meeting
-- keeps its reminders as rows, one per minutes_before, as before). Each occurrence's reminders
-- are rows of reminders like any other, named by (meeting_id, original_start, minutes_before):
-- the engine (scheduler, mirror, claim, fire, outbox) treats them as it treats every reminder,
-- and their ids make the occurrence ids (webhook-id, stream event id, push Topic) of each
-- occurrence. Rows exist only for a window of occurrences ahead (src/series_sync.c): written by
-- the API when a series changes and extended by the reconciler of the replica that owns the
-- series' shard, in both cases idempotently through the unique index below.

CREATE TABLE series (
    meeting_id uuid PRIMARY KEY REFERENCES meetings (id) ON DELETE CASCADE,
    tenant_id bigint NOT NULL,
    rrule text NOT NULL CHECK (char_length(rrule) BETWEEN 1 AND 256),
    exdates timestamptz[] NOT NULL CHECK (cardinality(exdates) <= 100),
    rdates timestamptz[] NOT NULL CHECK (cardinality(rdates) <= 100),
    reminder_minutes int[] NOT NULL CHECK (cardinality(reminder_minutes) <= 5),
    reminder_channels smallint[] NOT NULL
        CHECK (cardinality(reminder_channels) = cardinality(reminder_minutes)),
    -- The reconciler's share of the work: the meeting id's first byte, like reminders' id % 256.
    shard smallint NOT NULL CHECK (shard BETWEEN 0 AND 255),
    covered_to timestamptz NOT NULL,   -- occurrences starting before this have their rows
    extend_after timestamptz NOT NULL, -- when the reconciler extends the window again
    last_start timestamptz             -- the last original start (NULL: the rule never ends)
);
CREATE INDEX series_due ON series (shard, extend_after);

-- original_start: the occurrence a row reminds of (NULL for a single meeting's reminder);
-- starts_at: that occurrence's start, moved or not, for the missed rule and the notification.
ALTER TABLE reminders ADD COLUMN original_start timestamptz, ADD COLUMN starts_at timestamptz;
ALTER TABLE reminders DROP CONSTRAINT reminders_meeting_id_minutes_before_key;
CREATE UNIQUE INDEX reminders_single ON reminders (meeting_id, minutes_before)
    WHERE original_start IS NULL;
CREATE UNIQUE INDEX reminders_occurrence ON reminders (meeting_id, original_start, minutes_before)
    WHERE original_start IS NOT NULL;
-- A series shows each reminder's next firing: its earliest pending row.
CREATE INDEX reminders_occurrence_pending ON reminders (meeting_id, minutes_before, fire_at)
    WHERE status = 'pending' AND original_start IS NOT NULL;

-- One occurrence moved, retitled or cancelled (PATCH /v1/meetings/{id}/occurrences/{start}).
CREATE TABLE occurrence_overrides (
    meeting_id uuid NOT NULL REFERENCES meetings (id) ON DELETE CASCADE,
    original_start timestamptz NOT NULL,
    starts_at timestamptz,
    ends_at timestamptz,
    title text CHECK (char_length(title) BETWEEN 1 AND 200),
    cancelled boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (meeting_id, original_start)
);
