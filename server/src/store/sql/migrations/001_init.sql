-- Baton schema, version 1. Conventions (docs/event-journal.md, server/src/store/sql/):
-- * Every tenant table carries space_id; its primary key and indexes lead with it, so a space's
--   rows cluster together and the schema can be distributed by space_id (Citus) later.
--   The one exception is reservations_overdue, which serves a sweep across all spaces.
-- * Amounts are bigint (18 digits fit). Times are timestamptz written by the application from
--   its injected clock: no column default or statement here reads the database clock.
-- * Text that is compared or ordered uses COLLATE "C": byte order, the same order the memory
--   store's string comparison gives, whatever collation the database was created with.

CREATE TABLE orgs (
  id          text COLLATE "C" PRIMARY KEY,
  name        text NOT NULL,
  plan        text NOT NULL,
  limits      jsonb,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);

CREATE TABLE spaces (
  space_id    text COLLATE "C" PRIMARY KEY,
  org_id      text COLLATE "C" NOT NULL,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX spaces_by_org ON spaces (org_id);

-- Keys belong to an organization and may span several of its spaces, so they are keyed by id.
CREATE TABLE api_keys (
  id           text COLLATE "C" PRIMARY KEY,
  org_id       text COLLATE "C" NOT NULL,
  name         text NOT NULL,
  secret_hash  text NOT NULL,
  permissions  text[] NOT NULL,
  space_ids    text[],
  created_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);
CREATE INDEX api_keys_active_by_org ON api_keys (org_id) WHERE revoked_at IS NULL;

CREATE TABLE budgets (
  space_id         text COLLATE "C" NOT NULL,
  id               text COLLATE "C" NOT NULL,
  name             text COLLATE "C" NOT NULL,
  currency         text NOT NULL,
  scale            integer NOT NULL,
  limit_minor      bigint NOT NULL,
  available_minor  bigint NOT NULL,
  reserved_minor   bigint NOT NULL,
  settled_minor    bigint NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- Also serves list(): name order within a space.
  CONSTRAINT budgets_name_unique UNIQUE (space_id, name),
  -- Conservation, checked once more by the database (core/src/budgets/rules.ts checks first).
  CONSTRAINT budgets_conservation CHECK (
    available_minor >= 0 AND reserved_minor >= 0 AND settled_minor >= 0
    AND limit_minor = available_minor + reserved_minor + settled_minor
  )
);

CREATE TABLE reservations (
  space_id         text COLLATE "C" NOT NULL,
  id               text COLLATE "C" NOT NULL,
  budget_id        text COLLATE "C" NOT NULL,
  scope_id         text NOT NULL,
  holder           text NOT NULL,
  amount_minor     bigint NOT NULL CHECK (amount_minor >= 0),
  settled_minor    bigint NOT NULL CHECK (settled_minor >= 0),
  remaining_minor  bigint NOT NULL CHECK (remaining_minor >= 0),
  state            text NOT NULL CHECK (state IN ('ACTIVE', 'SETTLED', 'VOIDED')),
  settle_by        timestamptz,
  overdue_at       timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, budget_id) REFERENCES budgets (space_id, id)
);
-- listActive: a budget's ACTIVE reservations, oldest first.
CREATE INDEX reservations_active_by_budget ON reservations (space_id, budget_id, created_at, id) WHERE state = 'ACTIVE';
-- claimOverdue: the sweep looks across spaces in settle_by order, so this index cannot lead
-- with space_id; it holds only the reservations still waiting for their overdue event.
CREATE INDEX reservations_overdue ON reservations (settle_by, id)
  WHERE state = 'ACTIVE' AND overdue_at IS NULL AND settle_by IS NOT NULL;

CREATE TABLE budget_entries (
  space_id        text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  budget_id       text COLLATE "C" NOT NULL,
  reservation_id  text COLLATE "C" NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('SETTLE', 'VOID')),
  amount_minor    bigint NOT NULL CHECK (amount_minor >= 0),
  work_key        text COLLATE "C" NOT NULL,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- A settle or void is deduplicated by workKey within its budget; serves getByWorkKey.
  CONSTRAINT budget_entries_work_key_unique UNIQUE (space_id, budget_id, work_key),
  FOREIGN KEY (space_id, budget_id) REFERENCES budgets (space_id, id),
  FOREIGN KEY (space_id, reservation_id) REFERENCES reservations (space_id, id)
);

-- The event journal. `tx` is the writing transaction's id (not a clock): readers return only
-- events of transactions older than every transaction still running, in (tx, event_id) order,
-- so an event that may still commit can never sort before one already returned
-- (docs/event-journal.md).
CREATE TABLE events (
  space_id        text COLLATE "C" NOT NULL,
  tx              xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id        bigserial NOT NULL,
  type            text NOT NULL,
  aggregate_type  text NOT NULL,
  aggregate_id    text NOT NULL,
  scope_id        text,
  data            jsonb NOT NULL,
  occurred_at     timestamptz NOT NULL,
  -- Serves listAfter: WHERE space_id = $1 AND (tx, event_id) > ($2, $3) ORDER BY tx, event_id.
  PRIMARY KEY (space_id, tx, event_id)
);

-- Stored replies of idempotent requests. `body` is json, not jsonb, so a replay returns the
-- first reply exactly as it was written (jsonb would reorder its keys).
CREATE TABLE idempotency_keys (
  space_id     text COLLATE "C" NOT NULL,
  key          text COLLATE "C" NOT NULL,
  fingerprint  text NOT NULL,
  status_code  integer NOT NULL,
  body         json,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (space_id, key)
);
