-- 025_inbox_state.sql -- a participant's inbox state (issue 41): read and archived marks per
-- item, and each change of them as a stream event of its own, so that every tab and device of
-- that participant, on any replica, hears of it on the stream it already has, and a stream that
-- resumes gets the changes it missed in order with the reminders.
--
-- kind 0 is a fired reminder (an inbox item; its body is built from the meeting when read);
-- kind 1 is a change of inbox state, whose body was made by the change and is kept in data
-- (the item's seq, its marks and the unread count as they were after it). Both columns are added
-- with constant defaults, which PostgreSQL does without rewriting the table.
ALTER TABLE stream_events ADD COLUMN kind smallint NOT NULL DEFAULT 0;
ALTER TABLE stream_events ADD COLUMN data text;
-- NOT VALID: holds for every row written from now on without a scan of the events kept (every
-- existing row is a kind 0 without data).
ALTER TABLE stream_events ADD CONSTRAINT stream_events_kind
    CHECK ((kind = 0 AND data IS NULL) OR (kind = 1 AND data IS NOT NULL)) NOT VALID;

-- One row per item a participant marked; an item without one is unread and not archived. Gone
-- with its event (retention deletes events; the cascade finds their rows by the second index).
CREATE TABLE inbox_state (
    tenant_id bigint NOT NULL,
    participant text NOT NULL,
    seq bigint NOT NULL,
    read_at timestamptz,
    archived_at timestamptz,
    PRIMARY KEY (tenant_id, participant, seq),
    FOREIGN KEY (tenant_id, seq) REFERENCES stream_events (tenant_id, seq) ON DELETE CASCADE
);
CREATE INDEX inbox_state_event ON inbox_state (tenant_id, seq);
