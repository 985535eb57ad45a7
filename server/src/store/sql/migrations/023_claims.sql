-- Claims (core/src/claims, docs/design/0020-claims.md): an exclusive, leased hold on a claim key, with a
-- fencing token. Conventions as in 001_init.sql: space_id leads every key and index, times come
-- from the application's clock, compared text is COLLATE "C".

-- One row per (space, claim key) ever claimed: the key's fencing sequence. It is never deleted
-- with a claim, so the sequence survives release, expiry and restarts, and a fencing token never
-- repeats. Every acquire locks this row first (INSERT ... ON CONFLICT DO UPDATE), which puts
-- acquires of one key one after another on any number of servers.
CREATE TABLE claim_keys (
  space_id            text COLLATE "C" NOT NULL,
  claim_key           text COLLATE "C" NOT NULL CHECK (length(claim_key) BETWEEN 1 AND 512),
  last_fencing_token  bigint NOT NULL CHECK (last_fencing_token >= 0),
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  PRIMARY KEY (space_id, claim_key)
);

CREATE TABLE claims (
  space_id             text COLLATE "C" NOT NULL,
  id                   text COLLATE "C" NOT NULL,
  claim_key            text COLLATE "C" NOT NULL,
  scope_id             text NOT NULL,
  holder               text NOT NULL,
  -- SHA-256 (hex) of the holderSession and of the token: neither is stored in the clear.
  holder_session_hash  text NOT NULL,
  token_hash           text NOT NULL,
  -- One of the token's inputs (core/src/claims/rules.ts claimTokenFor); never shown by the API.
  token_nonce          text NOT NULL,
  fencing_token        bigint NOT NULL CHECK (fencing_token >= 1),
  state                text NOT NULL CHECK (state IN ('HELD', 'RELEASED', 'EXPIRED')),
  lease_expires_at     timestamptz NOT NULL,
  ended_at             timestamptz,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, claim_key) REFERENCES claim_keys (space_id, claim_key),
  -- core/src/claims/rules.ts assertClaim, once more in the database.
  CONSTRAINT claims_ended_at_set CHECK ((state = 'HELD') = (ended_at IS NULL)),
  -- A fencing token names one claim of its key, ever.
  CONSTRAINT claims_fencing_unique UNIQUE (space_id, claim_key, fencing_token)
);
-- At most one HELD claim per key, whatever the code does: the exclusion itself as a constraint.
-- Also getHeld's lookup.
CREATE UNIQUE INDEX claims_held_key ON claims (space_id, claim_key) WHERE state = 'HELD';
-- The expiry sweep (claimExpired) across spaces, and countLive: HELD rows only, earliest expiry first.
CREATE INDEX claims_held_by_expiry ON claims (lease_expires_at) WHERE state = 'HELD';
-- list(): a space's claims oldest first; the filters are applied on this range.
CREATE INDEX claims_by_created ON claims (space_id, created_at, id);
