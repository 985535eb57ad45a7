-- The journal's one read by aggregate is a task's own events (the task debugger view,
-- TaskRepository.listEvents). events_by_aggregate indexed every event, and a job writes six
-- (the task's and its delivery's: submitted and sent, running and claimed, succeeded and
-- acked): half of those index entries served no reader. This index holds task events only, and
-- in the order the view reads them, so the read needs no sort either.
DROP INDEX events_by_aggregate;
CREATE INDEX events_by_task ON events (space_id, aggregate_id, tx, event_id) WHERE aggregate_type = 'task';
