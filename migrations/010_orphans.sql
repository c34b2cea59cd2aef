-- 010_orphans.sql -- delivery takes the rows of a dead replica first (src/db_outbox.c). A leased
-- row has a lease_owner and its next_attempt_at at the lease's end; once that passes without a
-- renewal its owner is gone. In the due index such a row sorts behind a whole backlog due
-- earlier, so after a kill in a burst it waited for the backlog; this index holds only leased
-- rows (the few in flight), so a claim finds the orphans without walking the backlog.
CREATE INDEX outbox_leased ON outbox (next_attempt_at, id)
    WHERE status = 'pending' AND lease_owner IS NOT NULL;
