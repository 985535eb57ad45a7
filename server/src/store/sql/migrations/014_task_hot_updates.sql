-- A task's moves (PENDING -> RUNNING -> SUCCEEDED, the two updates of every job) become HOT
-- updates: a new row version on the same page and no new index entries. Measured (issue 13,
-- docs/benchmarks.md, pg_waldump over a 20,000-task runtime drain): 12 of a job's 34 index
-- insertions were the tasks' four indexes written again by these two updates, because
-- tasks_deadline_due named `state` in its predicate, and PostgreSQL makes no update HOT that
-- changes a column an index's predicate reads.
--
-- The deadline sweep's index now keys on a generated column that holds the deadline only while
-- the task is live. A task without a deadline keeps NULL there through every move, so none of its
-- updates touch an index column; a task with one changes it once, when it finishes.
ALTER TABLE tasks ADD COLUMN live_deadline timestamptz
  GENERATED ALWAYS AS (CASE WHEN state IN ('PENDING', 'RUNNING') THEN deadline END) STORED;
DROP INDEX tasks_deadline_due;
CREATE INDEX tasks_deadline_due ON tasks (live_deadline) WHERE live_deadline IS NOT NULL;
-- Room on each page for the versions a task's moves write (a HOT update needs its new version on
-- the old one's page); pruning reclaims the dead versions as the page fills.
ALTER TABLE tasks SET (fillfactor = 50);
