-- 014_reminders_meeting_fk.sql -- the reminders' key to meetings goes. Only retention deletes
-- meetings for good, and the key's cascade looked for each meeting's reminders with a sequential
-- scan (no index leads with meeting_id alone: reminders_single and reminders_occurrence are
-- partial), so a batch of 100 meetings read the whole table 100 times. Retention now deletes a
-- meeting's reminders and their outbox rows itself, through those two indexes, in the statement
-- that deletes the meeting (src/db_retention.c). An index on meeting_id would have served the
-- cascade, at an entry more per reminder written and per reminder fired. Reminders are only ever
-- written for a live meeting, under its row lock or in the statement that creates it.
ALTER TABLE reminders DROP CONSTRAINT reminders_meeting_id_fkey;
