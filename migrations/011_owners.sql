-- 011_owners.sql -- delivery leases move from the rows to their owners (src/db_outbox.c). A
-- delivery worker is an owner with one lease row here, renewed every half second; an outbox row
-- it holds names it in lease_owner and is never touched again until it is delivered, retried or
-- given back. The fire statement writes its rows already owned by a worker of the firing replica,
-- so a burst costs no lease update per row and no renewal per row. A row whose owner has no live
-- lease (lapsed, or no row at all: a killed replica, an older version's lease) is an orphan any
-- worker may take.
CREATE TABLE delivery_owners (
    owner text PRIMARY KEY,
    lease_until timestamptz NOT NULL
);

-- Held rows leave the due range, so a lease statement never walks past them; the held ones are
-- found by owner (a worker loading its own rows, the distinct owners when looking for orphans).
DROP INDEX outbox_leased;
DROP INDEX outbox_pending_due;
CREATE INDEX outbox_pending_due ON outbox (next_attempt_at, id)
    WHERE status = 'pending' AND lease_owner IS NULL;
CREATE INDEX outbox_held ON outbox (lease_owner, id)
    WHERE status = 'pending' AND lease_owner IS NOT NULL;
