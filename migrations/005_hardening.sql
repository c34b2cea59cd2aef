-- 005_hardening.sql -- repairs what a DELETE racing a PUT/PATCH could leave before it was fixed
-- (issue 8): reminders still pending on a deleted meeting. They would never fire any more (the
-- fire statement refuses deleted meetings), but the sweep would keep picking them up and the
-- reconciler would keep mirroring them. Cancelled, as the delete would have done.
UPDATE reminders r SET status = 'cancelled'
FROM meetings m
WHERE m.id = r.meeting_id AND m.deleted_at IS NOT NULL AND r.status = 'pending';
