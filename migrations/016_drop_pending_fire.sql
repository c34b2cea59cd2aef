-- 016_drop_pending_fire.sql -- every read of pending reminders by time goes through
-- reminders_pending_shard ((id % 256), fire_at, id) now, the replica that owns all shards too
-- (src/db_reminder.c). reminders_pending_fire (fire_at, id) was the other index those reads could
-- take, and a bad one for them: a slice of one shard served by it reads every shard's rows and
-- filters, which a plan made on an empty table chose and kept (a burst of 50,000 then took 153 s
-- of PostgreSQL time in due reads). Without it the shard's window can be bounded by fire_at itself,
-- a bound the scan stops at, and every pending reminder written costs one index entry fewer.
DROP INDEX reminders_pending_fire;
