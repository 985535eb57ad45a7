-- Usage for the limits of docs/design/0016-limits-and-retry-after.md. Neither table is touched by a request: each server
-- buffers its counts in memory and syncs them here in the background, about twice a second
-- (server/src/limits/limits-sync.ts), so the hot path gains no statement.
--
-- Operations per organization per UTC calendar month ('YYYY-MM'): the running total every server
-- adds its buffered count to. Kept 400 days (the retention sweep).
CREATE TABLE usage_operations (
  org_id      text COLLATE "C" NOT NULL,
  month       text COLLATE "C" NOT NULL,
  operations  bigint NOT NULL CHECK (operations >= 0),
  PRIMARY KEY (org_id, month)
);
-- The retention sweep deletes by month across organizations.
CREATE INDEX usage_operations_by_month ON usage_operations (month);

-- Each server's request count per organization for a calendar minute: a server sets its own row
-- and reads the others' sum, so the organization's rate holds across servers within one sync
-- interval of traffic. Rows of past minutes are only history and are deleted within minutes.
CREATE TABLE usage_request_minutes (
  minute      bigint NOT NULL,
  org_id      text COLLATE "C" NOT NULL,
  server_id   text COLLATE "C" NOT NULL,
  requests    integer NOT NULL CHECK (requests >= 0),
  PRIMARY KEY (minute, org_id, server_id)
);
