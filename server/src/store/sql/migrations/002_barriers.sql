-- Barriers (core/src/barriers). Conventions as in 001_init.sql: space_id leads every key and
-- index, times come from the application's clock, compared text is COLLATE "C".

CREATE TABLE barriers (
  space_id     text COLLATE "C" NOT NULL,
  id           text COLLATE "C" NOT NULL,
  scope_id     text NOT NULL,
  target       integer NOT NULL CHECK (target BETWEEN 1 AND 100000),
  epoch        bigint NOT NULL CHECK (epoch >= 1),
  state        text NOT NULL CHECK (state IN ('WAITING', 'RELEASED', 'CANCELLED')),
  -- Distinct arrivals of the current epoch: the count of its barrier_arrivals rows.
  arrivals     integer NOT NULL CHECK (arrivals >= 0 AND arrivals <= target),
  released_at  timestamptz,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- The invariants of core/src/barriers/rules.ts, checked once more by the database: the
  -- arrival that reaches the target releases the epoch, and only that.
  CONSTRAINT barriers_released_at_target CHECK ((state = 'RELEASED') = (arrivals = target)),
  CONSTRAINT barriers_released_at_set CHECK ((state = 'RELEASED') = (released_at IS NOT NULL))
);
-- list(): a space's barriers oldest first; the state filter is applied on this range.
CREATE INDEX barriers_by_created ON barriers (space_id, created_at, id);

-- One row per counted arrival. The primary key makes counting one arrivalKey twice in an
-- epoch impossible, and serves getArrival and countArrivals (a prefix of it).
CREATE TABLE barrier_arrivals (
  space_id     text COLLATE "C" NOT NULL,
  barrier_id   text COLLATE "C" NOT NULL,
  epoch        bigint NOT NULL,
  arrival_key  text COLLATE "C" NOT NULL,
  arrived_at   timestamptz NOT NULL,
  PRIMARY KEY (space_id, barrier_id, epoch, arrival_key),
  FOREIGN KEY (space_id, barrier_id) REFERENCES barriers (space_id, id)
);
