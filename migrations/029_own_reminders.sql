-- 029_own_reminders.sql -- a participant's own reminder offsets (issue 41, DESIGN section 13):
-- "reminders" in their preferences replaces the meeting's offsets for them. The offsets are kept
-- with the preferences (own_minutes and own_channels, one element per reminder, NULL when they
-- set none), and planned as reminder rows of their own: a row with a participant is that
-- participant's own reminder of its meeting (or of one occurrence of a series), fired and
-- delivered to them alone (src/db/db_own.c plans them, src/db/db_fire.c fires them); a row
-- without one is the meeting's, as before, and its fire leaves out each participant who has own
-- rows for that occurrence.
ALTER TABLE participant_prefs ADD COLUMN own_minutes int[], ADD COLUMN own_channels smallint[];
ALTER TABLE participant_prefs ADD CONSTRAINT participant_prefs_own CHECK (
    (own_minutes IS NULL) = (own_channels IS NULL)
    AND coalesce(cardinality(own_minutes) = cardinality(own_channels), true));

-- Added without a default: PostgreSQL adds the column without rewriting the table.
ALTER TABLE reminders ADD COLUMN participant text;

-- The meeting's rows keep their uniqueness (and the statements that name these indexes their
-- arbiters) with the predicate narrowed to them; the own rows are unique per (meeting,
-- occurrence, participant, minutes_before), one index for single meetings and series alike
-- (NULLS NOT DISTINCT: a single meeting's original_start is NULL). It leads with the meeting and
-- the occurrence, so a fire finds who has own rows of its occurrence with one short range scan.
DROP INDEX reminders_single;
CREATE UNIQUE INDEX reminders_single ON reminders (meeting_id, minutes_before)
    WHERE original_start IS NULL AND participant IS NULL;
DROP INDEX reminders_occurrence;
CREATE UNIQUE INDEX reminders_occurrence ON reminders (meeting_id, original_start, minutes_before)
    WHERE original_start IS NOT NULL AND participant IS NULL;
DROP INDEX reminders_occurrence_pending;
CREATE INDEX reminders_occurrence_pending ON reminders (meeting_id, minutes_before, fire_at)
    WHERE status = 'pending' AND original_start IS NOT NULL AND participant IS NULL;
CREATE UNIQUE INDEX reminders_own ON reminders (meeting_id, original_start, participant, minutes_before)
    NULLS NOT DISTINCT WHERE participant IS NOT NULL;
-- Whether a tenant has anyone with own reminders, and who: what planning a meeting looks up.
CREATE INDEX participant_prefs_own ON participant_prefs (tenant_id, participant)
    WHERE own_minutes IS NOT NULL;
