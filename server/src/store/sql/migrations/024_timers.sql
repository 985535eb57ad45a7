-- Timers (core/src/timers). Conventions as in 001_init.sql: space_id leads every key and index
-- of a space's rows, times come from the application's clock, compared text is COLLATE "C".

CREATE TABLE timers (
  space_id          text COLLATE "C" NOT NULL,
  id                text COLLATE "C" NOT NULL,
  timer_key         text COLLATE "C" NOT NULL,
  scope_id          text COLLATE "C" NOT NULL,
  mailbox_id        text COLLATE "C" NOT NULL,
  payload           jsonb NOT NULL,
  -- SHA-256 of the arm body (core/src/timers/rules.ts timerFingerprint): a repeat arm must match.
  fingerprint       text NOT NULL,
  fire_at           timestamptz NOT NULL,
  -- When the sweep next takes the timer: fire_at, pushed back while its mailbox has no room.
  due_at            timestamptz NOT NULL,
  state             text NOT NULL CHECK (state IN ('ARMED', 'FIRED', 'CANCELLED')),
  fired_at          timestamptz,
  -- No foreign key: retention deletes finished messages, the timer keeps naming what it sent.
  fired_message_id  text COLLATE "C",
  cancelled_at      timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  -- A timerKey names one timer in its space; a concurrent second arm loses on this key.
  CONSTRAINT timers_key_unique UNIQUE (space_id, timer_key),
  FOREIGN KEY (space_id, mailbox_id) REFERENCES mailboxes (space_id, id),
  -- The invariants of core/src/timers/rules.ts assertTimer, checked once more by the database.
  CONSTRAINT timers_fired_iff CHECK ((state = 'FIRED') = (fired_at IS NOT NULL AND fired_message_id IS NOT NULL)),
  CONSTRAINT timers_fired_only CHECK (state = 'FIRED' OR (fired_at IS NULL AND fired_message_id IS NULL)),
  CONSTRAINT timers_cancelled_iff CHECK ((state = 'CANCELLED') = (cancelled_at IS NOT NULL)),
  CONSTRAINT timers_due_after_fire CHECK (due_at >= fire_at),
  CONSTRAINT timers_key_length CHECK (char_length(timer_key) BETWEEN 1 AND 512)
);
-- list(): a space's timers oldest first; the state and scope filters apply on this range.
CREATE INDEX timers_by_created ON timers (space_id, created_at, id);
-- claimDue, the firing sweep: across spaces (like messages_lease_due), oldest due first, and only
-- ARMED rows, so fired and cancelled history costs the sweep nothing.
CREATE INDEX timers_due ON timers (due_at, space_id, id) WHERE state = 'ARMED';
-- countArmed (maxArmedTimers, counted up to the cap) and lockArmedInScopes (a run's cancel).
CREATE INDEX timers_armed ON timers (space_id, scope_id) WHERE state = 'ARMED';
-- countByState: a run's timers by state.
CREATE INDEX timers_by_scope ON timers (space_id, scope_id, state);
