-- 018_count_until.sql -- a COUNT rule's UNTIL equivalent, stored with its series (issue 35,
-- N4). libical can move an iterator to a date only when the rule has no COUNT: a COUNT rule was
-- walked from its start on every read (up to 10,000 times, ~25 ms per series, under the
-- process-wide libical lock). count_until is the instant the rule's last (COUNT-th) time
-- resolves to, in whole seconds as UNTIL (series_count_until in src/domain/series.c): computed
-- once when the series is written, after which every read expands the rule as the UNTIL rule
-- it equals and starts near its range. NULL for rules without COUNT. count_until_version is the
-- meeting version it was computed for, and a read uses it only while the meeting is at that
-- version: a replica without this column (a rolling upgrade) changes a series' rule or start
-- without touching either, and the version it moves makes the stale value unused.
ALTER TABLE series ADD COLUMN count_until timestamptz, ADD COLUMN count_until_version bigint;

-- COUNT series written before this migration: the reconciler computes theirs at its next pass
-- over them (series_sync_extend), brought forward to now.
UPDATE series SET extend_after = now() WHERE rrule ~ '(^|;)COUNT=';
