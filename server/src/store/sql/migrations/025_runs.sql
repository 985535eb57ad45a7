-- Runs (docs/design/0019-runs.md): a scopeId made explicit, with a parent, a child limit and an end. Same
-- conventions as 001_init.sql. Requests under a scopeId never read this table: runs are
-- optional, and work without one is untouched.
CREATE TABLE runs (
  space_id         text COLLATE "C" NOT NULL,
  scope_id         text COLLATE "C" NOT NULL,
  parent_scope_id  text COLLATE "C",
  name             text,
  state            text NOT NULL CHECK (state IN ('ACTIVE', 'COMPLETED', 'CANCELLED')),
  child_limit      integer NOT NULL CHECK (child_limit BETWEEN 1 AND 10000),
  children         integer NOT NULL CHECK (children >= 0 AND children <= child_limit),
  cascade_pending  boolean NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  ended_at         timestamptz,
  PRIMARY KEY (space_id, scope_id),
  CONSTRAINT runs_ended_iff_not_active CHECK ((state = 'ACTIVE') = (ended_at IS NULL)),
  CONSTRAINT runs_cascade_only_cancelled CHECK (NOT cascade_pending OR state = 'CANCELLED')
);
-- A run's children: the run view's page (by scopeId) and cancel's cascade (ACTIVE ones).
CREATE INDEX runs_by_parent ON runs (space_id, parent_scope_id, scope_id) WHERE parent_scope_id IS NOT NULL;
-- The cascade sweep across spaces, and the organization's active runs (the plan limit).
CREATE INDEX runs_cascading ON runs (created_at) WHERE cascade_pending;
CREATE INDEX runs_active ON runs (space_id) WHERE state = 'ACTIVE';
