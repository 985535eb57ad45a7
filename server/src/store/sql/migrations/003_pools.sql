-- Pools and work limits: fixed counts of units with a count in use, claimed by admission
-- together with a delivery (docs/design/0008-tasks-and-deliveries.md). Same conventions as 001_init.sql: space_id leads
-- every key and index, names compare in byte order (COLLATE "C"), and times are written by
-- the application from its injected clock.
--
-- A claim and a release are each one UPDATE whose WHERE clause (claim) or CHECK (release)
-- keeps 0 <= in_use <= the limit, so concurrent admissions need no lock held across
-- statements (server/src/store/sql/repositories/pools.ts).
--
-- Who holds how many units is not recorded here: per-holder grant rows (for renew and lease
-- expiry) arrive with admission, shaped as
--   pool_grants (space_id, pool_id, message_id, holder, holder_session, units, expires_at,
--                PRIMARY KEY (space_id, pool_id, message_id),
--                FOREIGN KEY (space_id, pool_id) REFERENCES pools (space_id, id))
-- and likewise work_limit_slots, with the invariant in_use = the sum of live grants' units.

CREATE TABLE pools (
  space_id    text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  name        text COLLATE "C" NOT NULL,
  capacity    integer NOT NULL CHECK (capacity >= 1),
  in_use      integer NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- Requirements name pools: serves getByName, and list() in name order within a space.
  CONSTRAINT pools_name_unique UNIQUE (space_id, name),
  -- Checked once more by the database (core/src/pools/rules.ts checks first).
  CONSTRAINT pools_in_use CHECK (in_use >= 0 AND in_use <= capacity)
);

CREATE TABLE work_limits (
  space_id        text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  name            text COLLATE "C" NOT NULL,
  max_concurrent  integer NOT NULL CHECK (max_concurrent >= 1),
  in_use          integer NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  CONSTRAINT work_limits_name_unique UNIQUE (space_id, name),
  CONSTRAINT work_limits_in_use CHECK (in_use >= 0 AND in_use <= max_concurrent)
);
