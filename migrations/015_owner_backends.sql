-- 015_owner_backends.sql -- a killed replica's leases end when its connections do, not when they
-- time out. A delivery owner and a replica's heartbeat row name the PostgreSQL backend that wrote
-- them (its pid and start time: a pid alone may be reused). kill -9 closes the process's sockets,
-- its idle backends exit at once, and from then on the rows count as lapsed (src/db_outbox.c,
-- src/db_members.c): its held outbox rows are taken by the next worker that looks instead of
-- after the rest of the 1.5 s lease. The time bound stays for what the backend cannot tell (a
-- host that vanished without closing its sockets), and is the only bound through PgBouncer,
-- whose server connections outlive their clients: there the columns stay NULL.
ALTER TABLE delivery_owners ADD COLUMN backend_pid int, ADD COLUMN backend_start timestamptz;
ALTER TABLE replicas ADD COLUMN backend_pid int, ADD COLUMN backend_start timestamptz;

-- Whether the backend (pid, started) is known to be gone: false when no backend was named, and
-- false when the row is hidden from the caller (another role's session shows no start time
-- without pg_read_all_stats): a lease is never ended on a guess.
CREATE FUNCTION tocsin_backend_gone(pid int, started timestamptz) RETURNS bool
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN pid IS NULL THEN false ELSE NOT EXISTS (SELECT 1
           FROM pg_stat_get_activity(pid) a WHERE a.backend_start IS NULL OR a.backend_start = started) END $$;

-- The calling backend's start time, or NULL when track is false (through a pooler).
CREATE FUNCTION tocsin_backend_start(track bool) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN track THEN (SELECT backend_start
           FROM pg_stat_get_activity(pg_backend_pid())) END $$;
