-- 028_preferences.sql -- a participant's preferences (issue 41, DESIGN section 13): channels on or
-- off and quiet hours in their own time zone, applied when a reminder fires (src/db/db_fire.c),
-- and the `skipped` outcome that says why a delivery was not made.
--
-- One row per participant who set something; a participant without one has every channel on and
-- no quiet hours. A quiet window runs from quiet_start to quiet_end, minutes after local midnight
-- in quiet_zone (an IANA name, checked by the API against the zone files the meetings use); a
-- start after the end is a window over midnight; the API refuses equal ones.
CREATE TABLE participant_prefs (
    tenant_id bigint NOT NULL,
    participant text NOT NULL CHECK (char_length(participant) BETWEEN 1 AND 200),
    email boolean NOT NULL DEFAULT true,
    push boolean NOT NULL DEFAULT true,
    quiet_zone text CHECK (char_length(quiet_zone) BETWEEN 1 AND 64),
    quiet_start smallint CHECK (quiet_start BETWEEN 0 AND 1439),
    quiet_end smallint CHECK (quiet_end BETWEEN 0 AND 1439),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, participant),
    CHECK ((quiet_zone IS NULL) = (quiet_start IS NULL) AND (quiet_zone IS NULL) = (quiet_end IS NULL)),
    CHECK (quiet_start <> quiet_end)
);

-- The instant a local wall-clock time L of zone z names, as section 9 resolves them: in an autumn
-- overlap the first (earlier) instant, in a spring gap L moved forward by the gap (L read with the
-- offset before the change). The two candidate offsets are the zone's a day either side of
-- PostgreSQL's own reading of L (no zone changes offset twice within two days).
CREATE FUNCTION tocsin_local_instant(z text, l timestamp) RETURNS timestamptz
LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
    c timestamptz := l AT TIME ZONE z;
    before_off interval := ((c - interval '1 day') AT TIME ZONE z) - ((c - interval '1 day') AT TIME ZONE 'UTC');
    after_off interval := ((c + interval '1 day') AT TIME ZONE z) - ((c + interval '1 day') AT TIME ZONE 'UTC');
    a timestamptz := (l - before_off) AT TIME ZONE 'UTC';
    b timestamptz := (l - after_off) AT TIME ZONE 'UTC';
    a_ok boolean := (a AT TIME ZONE z) = l;
    b_ok boolean := (b AT TIME ZONE z) = l;
BEGIN
    IF a_ok AND b_ok THEN
        RETURN least(a, b);
    ELSIF a_ok THEN
        RETURN a;
    ELSIF b_ok THEN
        RETURN b;
    END IF;
    RETURN a; -- a gap: no reading round-trips; the offset before it moves L forward
END $$;

-- When the quiet window of (z, start, end) that holds the instant t ends; NULL when t is outside
-- every window. Minutes of the local time decide; an end at or before the local time of day is
-- tomorrow's.
CREATE FUNCTION tocsin_quiet_end(z text, q_start int, q_end int, t timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
    l timestamp := t AT TIME ZONE z;
    m int := extract(hour FROM l)::int * 60 + extract(minute FROM l)::int;
    d date := l::date;
BEGIN
    IF NOT (CASE WHEN q_start < q_end THEN m >= q_start AND m < q_end
                 ELSE m >= q_start OR m < q_end END) THEN
        RETURN NULL;
    END IF;
    IF m >= q_end THEN
        d := d + 1;
    END IF;
    RETURN tocsin_local_instant(z, d + q_end * interval '1 minute');
END $$;

-- A delivery not made, and why (last_error: `preference`, a channel the participant turned off;
-- `quiet_hours`, their quiet hours last past the meeting's start). NOT VALID: every row kept
-- already holds (no row was skipped before), and checking them would scan the outbox.
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check
    CHECK (status IN ('pending', 'delivered', 'failed', 'skipped')) NOT VALID;
-- Retention purges skipped rows with the delivered and failed ones (src/db/db_retention.c).
CREATE INDEX outbox_finished_created ON outbox (created_at)
    WHERE status IN ('delivered', 'failed', 'skipped');
DROP INDEX outbox_done_created;

-- Whether PostgreSQL knows zone z (the API checks names against the zone files first; this one
-- guards the fire statement, which reads quiet_zone with AT TIME ZONE and would fail on a name
-- the database lacks).
CREATE FUNCTION tocsin_zone_ok(z text) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
BEGIN
    PERFORM now() AT TIME ZONE z;
    RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END $$;
