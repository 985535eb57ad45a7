-- Allowances (shared quotas): fixed windows aligned to created_at, a strict FIFO line of
-- waiters, cooldowns. Same conventions as 001_init.sql: space_id leads every key and index,
-- times are written by the application from its injected clock.

CREATE TABLE allowances (
  space_id         text COLLATE "C" NOT NULL,
  id               text COLLATE "C" NOT NULL,
  name             text COLLATE "C" NOT NULL,
  units_limit      integer NOT NULL CHECK (units_limit >= 1),
  window_seconds   integer NOT NULL CHECK (window_seconds >= 1),
  window_starts_at timestamptz NOT NULL,
  used_units       integer NOT NULL,
  cooldown_until   timestamptz,
  cooldown_reason  text,
  next_position    bigint NOT NULL,
  wake_at          timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  CONSTRAINT allowances_name_unique UNIQUE (space_id, name),
  -- Units used in a window never exceed the limit (core/src/allowances/rules.ts checks first).
  CONSTRAINT allowances_used_within_limit CHECK (used_units >= 0 AND used_units <= units_limit)
);
-- claimDue: the grant sweep looks across spaces for lines that time alone can move.
CREATE INDEX allowances_due ON allowances (wake_at) WHERE wake_at IS NOT NULL;

CREATE TABLE allowance_waiters (
  space_id      text COLLATE "C" NOT NULL,
  id            text COLLATE "C" NOT NULL,
  allowance_id  text COLLATE "C" NOT NULL,
  position      bigint NOT NULL,
  scope_id      text NOT NULL,
  holder        text NOT NULL,
  units         integer NOT NULL CHECK (units >= 1),
  state         text NOT NULL CHECK (state IN ('WAITING', 'GRANTED', 'CANCELLED', 'EXPIRED')),
  granted_at    timestamptz,
  expires_at    timestamptz NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- One place in the line per position: FIFO order is position order.
  CONSTRAINT allowance_waiters_position_unique UNIQUE (space_id, allowance_id, position),
  FOREIGN KEY (space_id, allowance_id) REFERENCES allowances (space_id, id)
);
-- listWaiting and countWaitingInSpace: only the line itself.
CREATE INDEX allowance_waiters_line ON allowance_waiters (space_id, allowance_id, position) WHERE state = 'WAITING';

CREATE TABLE allowance_consumptions (
  space_id          text COLLATE "C" NOT NULL,
  id                text COLLATE "C" NOT NULL,
  allowance_id      text COLLATE "C" NOT NULL,
  scope_id          text NOT NULL,
  holder            text NOT NULL,
  units             integer NOT NULL CHECK (units >= 1),
  work_key          text COLLATE "C",
  window_starts_at  timestamptz NOT NULL,
  created_at        timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, allowance_id) REFERENCES allowances (space_id, id)
);
-- A consume is deduplicated by workKey within its allowance; serves getByWorkKey.
CREATE UNIQUE INDEX allowance_consumptions_work_key ON allowance_consumptions (space_id, allowance_id, work_key) WHERE work_key IS NOT NULL;
