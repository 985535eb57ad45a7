-- Webhooks (issue 15): destinations that follow a space's journal by a cursor of their own,
-- and one audit row per delivery attempt (docs/design/0014-webhooks.md). No outbox row per event: the request
-- path writes nothing for webhooks; dispatchers read the journal (repositories/destinations.ts).

CREATE TABLE webhook_destinations (
  space_id                text COLLATE "C" NOT NULL,
  id                      text COLLATE "C" NOT NULL,
  url                     text NOT NULL,
  event_types             text[] NOT NULL,
  -- AES-256-GCM under BATON_SECRET_KEY (server/src/webhooks/seal.ts): never the secret in clear.
  sealed_secret           text NOT NULL,
  state                   text NOT NULL CHECK (state IN ('ACTIVE', 'PAUSED')),
  -- Journal position (eventId) of the last event handled.
  cursor                  text NOT NULL,
  last_delivered_event_id text,
  delivered_count         bigint NOT NULL CHECK (delivered_count >= 0),
  consecutive_failures    integer NOT NULL CHECK (consecutive_failures >= 0),
  failed_count            bigint NOT NULL CHECK (failed_count >= 0),
  failing_since           timestamptz,
  next_attempt_at         timestamptz NOT NULL,
  lease_expires_at        timestamptz,
  lease_token             text,
  paused_at               timestamptz,
  paused_reason           text,
  last_error              text,
  created_at              timestamptz NOT NULL,
  updated_at              timestamptz NOT NULL,
  PRIMARY KEY (space_id, id)
);

-- GET /destinations pages by (created_at, id) within a space.
CREATE INDEX webhook_destinations_by_created ON webhook_destinations (space_id, created_at, id);

-- The dispatchers' claim, across spaces: ACTIVE destinations by next_attempt_at. Partial, so
-- PAUSED ones cost nothing to the claim; small, as there are few destinations per space.
CREATE INDEX webhook_destinations_due ON webhook_destinations (next_attempt_at) WHERE state = 'ACTIVE';

CREATE TABLE webhook_delivery_attempts (
  space_id        text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  -- No foreign key: the audit outlives a deleted destination (kept 365 days, docs/design/0017-retention.md).
  destination_id  text COLLATE "C" NOT NULL,
  event_id        text NOT NULL,
  attempt         integer NOT NULL CHECK (attempt >= 1),
  status          text NOT NULL CHECK (status IN ('SUCCEEDED', 'FAILED')),
  http_status     integer,
  error           text,
  response_body   text,
  duration_ms     integer NOT NULL CHECK (duration_ms >= 0),
  attempted_at    timestamptz NOT NULL,
  next_attempt_at timestamptz,
  PRIMARY KEY (space_id, id)
);

-- GET /deliveries: most recent first within a space, and the same per destination.
CREATE INDEX webhook_attempts_recent ON webhook_delivery_attempts (space_id, attempted_at DESC, id DESC);
CREATE INDEX webhook_attempts_by_destination ON webhook_delivery_attempts (space_id, destination_id, attempted_at DESC, id DESC);
