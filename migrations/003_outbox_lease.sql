-- 003_outbox_lease.sql -- a delivery lease is now next_attempt_at moved to the lease's end, with
-- lease_owner naming the holder (db_webhook.c): a held row is simply not due. The fire statement
-- no longer leases its new rows to the replica that fired them (002's header describes that older
-- scheme). lease_until only repeated next_attempt_at, so it goes.
ALTER TABLE outbox DROP COLUMN lease_until;
