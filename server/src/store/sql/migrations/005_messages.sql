-- Mailboxes and messages with leases. Same conventions as 001_init.sql: space_id leads every
-- key and index of a space's rows, times are written by the application from its injected clock.

CREATE TABLE mailboxes (
  space_id       text COLLATE "C" NOT NULL,
  id             text COLLATE "C" NOT NULL,
  name           text COLLATE "C" NOT NULL,
  mode           text NOT NULL CHECK (mode IN ('WORK', 'INBOX')),
  recipient_id   text,
  backlog_limit  integer NOT NULL CHECK (backlog_limit BETWEEN 1 AND 100000),
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  CONSTRAINT mailboxes_name_unique UNIQUE (space_id, name)
);

CREATE TABLE messages (
  space_id          text COLLATE "C" NOT NULL,
  id                text COLLATE "C" NOT NULL,
  mailbox_id        text COLLATE "C" NOT NULL,
  -- Send order: FIFO is by seq, since many sends share one clock millisecond.
  seq               bigint GENERATED ALWAYS AS IDENTITY,
  scope_id          text COLLATE "C" NOT NULL,
  payload           jsonb NOT NULL,
  work_key          text COLLATE "C",
  deadline          timestamptz,
  state             text NOT NULL CHECK (state IN ('READY', 'CLAIMED', 'ACKED', 'DEAD', 'CANCELLED')),
  attempt           integer NOT NULL CHECK (attempt BETWEEN 0 AND 5),
  -- SHA-256 of the live claim's token (never the token): one column, so one live lease at most.
  token_hash        text COLLATE "C",
  holder            text,
  holder_session    text,
  lease_expires_at  timestamptz,
  result            jsonb,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (space_id, id),
  FOREIGN KEY (space_id, mailbox_id) REFERENCES mailboxes (space_id, id),
  -- A lease exists exactly while CLAIMED (core/src/messages/rules.ts assertMessage checks first).
  CONSTRAINT messages_lease_iff_claimed CHECK (
    (state = 'CLAIMED') = (token_hash IS NOT NULL AND lease_expires_at IS NOT NULL AND holder IS NOT NULL AND holder_session IS NOT NULL)
    AND (state = 'CLAIMED' OR (token_hash IS NULL AND lease_expires_at IS NULL))
  )
);
-- claimNext, the hot path of recv and admission: the oldest READY message of a mailbox and scope.
CREATE INDEX messages_ready ON messages (space_id, mailbox_id, scope_id, seq) WHERE state = 'READY';
-- The message list of a mailbox, in send order (with or without a state filter).
CREATE INDEX messages_by_mailbox ON messages (space_id, mailbox_id, seq);
-- countLive: what backlogLimit counts, without walking finished messages.
CREATE INDEX messages_live ON messages (space_id, mailbox_id) WHERE state IN ('READY', 'CLAIMED');
-- A send is deduplicated by workKey within its mailbox; serves getByWorkKey.
CREATE UNIQUE INDEX messages_work_key ON messages (space_id, mailbox_id, work_key) WHERE work_key IS NOT NULL;
-- claimExpired: the lease sweep looks across spaces (like allowances_due), so expiry leads here.
CREATE INDEX messages_lease_due ON messages (lease_expires_at) WHERE state = 'CLAIMED';
