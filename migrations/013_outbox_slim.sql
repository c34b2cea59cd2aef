-- 013_outbox_slim.sql -- two of the outbox's write costs go. Every outbox row is written twice,
-- when its reminder fires (src/db_fire.c) and when its attempt is recorded, and each index costs at
-- both writes, the key at the first. outbox_meeting took an entry on a random page of a uuid index
-- at each write (about 40% of the statement that records deliveries, measured on a scratch
-- database); the one reader it served, a meeting's deliveries, now reaches them through the
-- meeting's reminders and outbox_occurrence_target. The key to reminders took a row lock per fired
-- outbox row; the statements that delete reminders (src/db_meeting.c, src/db_series.c) now delete
-- their outbox rows themselves, and so does retention's purge of deleted meetings (migrations/014).
-- A row whose reminder is gone all the same (deleted while it fired) is still delivered: it fired
-- before the delete.
ALTER TABLE outbox DROP CONSTRAINT outbox_reminder_id_fkey;
DROP INDEX outbox_meeting;
