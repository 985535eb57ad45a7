-- Task groups (docs/design/0010-task-groups.md). Same conventions as 001_init.sql: space_id leads every key and
-- index of a space's rows, times are written by the application from its injected clock.

CREATE TABLE task_groups (
  space_id          text COLLATE "C" NOT NULL,
  id                text COLLATE "C" NOT NULL,
  -- The gate scope: member tasks run in it. A child of parent_scope_id when that is set.
  scope_id          text COLLATE "C" NOT NULL,
  parent_scope_id   text COLLATE "C",
  mailbox_id        text COLLATE "C" NOT NULL,
  condition         text NOT NULL CHECK (condition IN ('FIRST_ACCEPTED', 'N_ACCEPTED', 'ALL_TERMINAL')),
  threshold         integer CHECK (threshold BETWEEN 1 AND 1000),
  expected_members  integer CHECK (expected_members BETWEEN 1 AND 100),
  deadline          timestamptz,
  state             text NOT NULL CHECK (state IN ('OPEN', 'SEALED', 'DECIDED')),
  outcome           text CHECK (outcome IN ('SUCCEEDED', 'FAILED')),
  outcome_reason    text CHECK (outcome_reason IN ('THRESHOLD_MET', 'ALL_TERMINAL', 'THRESHOLD_UNREACHABLE', 'DEADLINE_EXCEEDED')),
  member_count      integer NOT NULL CHECK (member_count BETWEEN 0 AND 100),
  decided_at        timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, mailbox_id) REFERENCES mailboxes (space_id, id),
  -- The outcome is set exactly when the group is DECIDED (core/src/groups/rules.ts assertGroup checks first).
  CONSTRAINT task_groups_outcome_iff_decided CHECK (
    (state = 'DECIDED') = (outcome IS NOT NULL AND outcome_reason IS NOT NULL AND decided_at IS NOT NULL)
  )
);
-- The group list, in (created_at, id) order.
CREATE INDEX task_groups_by_created ON task_groups (space_id, created_at, id);
-- getForClaim: the gate scopes below a scope, walked one level at a time.
CREATE INDEX task_groups_by_parent_scope ON task_groups (space_id, parent_scope_id) WHERE parent_scope_id IS NOT NULL;
-- claimDeadlinePassed: the deadline sweep looks across spaces (like tasks_deadline_due).
CREATE INDEX task_groups_deadline_due ON task_groups (deadline) WHERE state <> 'DECIDED' AND deadline IS NOT NULL;

CREATE TABLE task_group_members (
  space_id    text COLLATE "C" NOT NULL,
  group_id    text COLLATE "C" NOT NULL,
  task_id     text COLLATE "C" NOT NULL,
  position    integer NOT NULL CHECK (position BETWEEN 1 AND 100),
  verdict     text NOT NULL CHECK (verdict IN ('PENDING', 'ACCEPTED', 'REJECTED')),
  joined_at   timestamptz NOT NULL,
  verdict_at  timestamptz,
  -- A task is a member of one group at most.
  PRIMARY KEY (space_id, task_id),
  CONSTRAINT task_group_members_position_unique UNIQUE (space_id, group_id, position),
  FOREIGN KEY (space_id, group_id) REFERENCES task_groups (space_id, id),
  FOREIGN KEY (space_id, task_id) REFERENCES tasks (space_id, id)
);

-- The group a task is a member of, on the task row itself: the task hooks learn it from the row
-- they already update (RETURNING), so a task that is in no group pays nothing for groups.
ALTER TABLE tasks ADD COLUMN group_id text COLLATE "C";
