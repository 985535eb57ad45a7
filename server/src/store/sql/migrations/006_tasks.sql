-- Tasks and their subscribers. Same conventions as 001_init.sql: space_id leads every key and
-- index of a space's rows, times are written by the application from its injected clock.

CREATE TABLE tasks (
  space_id        text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  task_key        text COLLATE "C" NOT NULL,
  fingerprint     text COLLATE "C" NOT NULL,
  mailbox_id      text COLLATE "C" NOT NULL,
  scope_id        text COLLATE "C" NOT NULL,
  state           text NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED')),
  input           jsonb NOT NULL,
  requirements    jsonb NOT NULL,
  work_limit      text COLLATE "C",
  deadline        timestamptz,
  attempts        integer NOT NULL CHECK (attempts BETWEEN 0 AND 5),
  outcome         jsonb,
  failure_reason  text,
  message_id      text COLLATE "C",
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, mailbox_id) REFERENCES mailboxes (space_id, id),
  -- Create-or-join is by (space, taskKey).
  CONSTRAINT tasks_key_unique UNIQUE (space_id, task_key)
);
-- The task list, in (created_at, id) order, optionally by scope.
CREATE INDEX tasks_by_created ON tasks (space_id, created_at, id);
CREATE INDEX tasks_by_scope ON tasks (space_id, scope_id, created_at, id);
-- claimDeadlinePassed: the deadline sweep looks across spaces (like messages_lease_due).
CREATE INDEX tasks_deadline_due ON tasks (deadline) WHERE state IN ('PENDING', 'RUNNING') AND deadline IS NOT NULL;

CREATE TABLE task_subscribers (
  space_id       text COLLATE "C" NOT NULL,
  task_id        text COLLATE "C" NOT NULL,
  subscriber_id  text COLLATE "C" NOT NULL,
  scope_id       text COLLATE "C" NOT NULL,
  joined_at      timestamptz NOT NULL,
  PRIMARY KEY (space_id, task_id, subscriber_id),
  FOREIGN KEY (space_id, task_id) REFERENCES tasks (space_id, id)
);

-- A task's delivery carries its taskId.
ALTER TABLE messages ADD COLUMN task_id text COLLATE "C";

-- The debugger view reads a task's events from the journal by aggregate.
CREATE INDEX events_by_aggregate ON events (space_id, aggregate_type, aggregate_id);
