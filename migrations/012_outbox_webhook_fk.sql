-- 012_outbox_webhook_fk.sql -- the outbox's foreign key to webhooks goes. The fire statement
-- (src/db_fire.c) writes a webhook's outbox row from the live webhook row it has just read, and
-- webhooks are never deleted, only marked (deleted_at), so the key checked what cannot fail: at a
-- row lock per outbox row, every one of a tenant's rows on its one webhook row, from every replica
-- firing at once (a tenth of the fire statement's time in a 50,000 burst). A row whose webhook row
-- were ever missing is treated as a deleted webhook's (src/db_outbox.c): recorded failed, not sent.
ALTER TABLE outbox DROP CONSTRAINT outbox_webhook_id_fkey;
