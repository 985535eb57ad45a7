-- Retention (docs/design/0017-retention.md): tasks tombstoned, finished messages and old journal events deleted
-- after the organization's plan window, webhook delivery audit after 365 days. The sweep
-- (server/src/host/retention.ts) pages through spaces and deletes by space with each space's
-- cutoff, so every statement below is one index range per space, bounded by its LIMIT.

-- A tombstoned task keeps its state and reasons; its input and outcome are cleared.
-- A constant default: no table rewrite.
ALTER TABLE tasks ADD COLUMN tombstoned boolean NOT NULL DEFAULT false;

-- tombstoneFinished: a space's tasks not yet tombstoned, oldest first. A task finishes after it
-- was created, so every task due (finished at or before the cutoff) lies in created_at <= cutoff;
-- tombstoned tasks drop out of the index, so its scan never walks the tombstoned past.
-- Cost to a request: one index entry per submitted task. None on a task's moves: neither the
-- key nor the predicate changes as a task runs, so its PENDING -> RUNNING -> done updates stay
-- HOT (migration 014). Only the sweep's own update (tombstoned = true) is not HOT.
CREATE INDEX tasks_untombstoned ON tasks (space_id, created_at) WHERE NOT tombstoned;

-- purgeFinished: a space's finished messages by the time they finished (updated_at: a finished
-- message is never updated again). Cost to a request: one index entry when a message finishes
-- (ack, dead, cancel). That update changes `state`, which the partial indexes of 005 and 007 name,
-- so it is never HOT and already writes an entry into every other index; this adds one more.
CREATE INDEX messages_finished ON messages (space_id, updated_at) WHERE state IN ('ACKED', 'DEAD', 'CANCELLED');

-- The journal's start per space: the position of the newest event the sweep deleted. A cursor
-- before it lost events to retention, and its page says `truncated: true`. Written only by the
-- sweep (one row per space, raised as events go); read by GET /events and GET /watch with a cursor.
-- The journal purge itself needs no index: it walks the primary key (space_id, tx, event_id)
-- from each space's start, which is where the oldest events are.
CREATE TABLE journal_starts (
  space_id                 text COLLATE "C" PRIMARY KEY,
  purged_through_tx        xid8 NOT NULL,
  purged_through_event_id  bigint NOT NULL
);

-- purgeUntil of the delivery audit, across spaces (a fixed 365 days, not a plan window). BRIN
-- rather than B-tree: attempts are appended in attempted_at order, so block ranges summarise them
-- well; it costs the dispatcher's insert almost nothing and requests nothing at all.
CREATE INDEX webhook_attempts_attempted_brin ON webhook_delivery_attempts USING brin (attempted_at);
