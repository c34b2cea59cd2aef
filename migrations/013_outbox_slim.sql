-- 013_outbox_slim.sql -- two of the outbox's write costs go. Every outbox row is written twice,
-- when its reminder fires (src/db_fire.c) and when its attempt is recorded, and each index and key
-- is paid at both. outbox_meeting took an entry on a random page of a uuid index at each write
-- (about 40% of the statement that records deliveries, measured on a scratch database); the one
-- reader it served, a meeting's deliveries, now reaches them through the meeting's reminders and
-- outbox_occurrence_target. The key to reminders took a row lock per fired outbox row; the
-- statements that delete reminders (src/db_meeting.c, src/db_series.c) now delete their outbox
-- rows themselves. A row whose reminder is gone all the same (deleted while it fired) is still
-- delivered: it fired before the delete; rows of meetings removed for good are swept by age
-- (src/db_retention.c) like every other finished row.
ALTER TABLE outbox DROP CONSTRAINT outbox_reminder_id_fkey;
DROP INDEX outbox_meeting;
