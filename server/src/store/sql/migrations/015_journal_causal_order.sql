-- The journal's order is causal: an event sorts after every event its transaction could have
-- seen. Until now an event's `tx` was its writing transaction's xid, taken at the transaction's
-- first write; a transaction that locked a row early could then read, or wait out the lock of,
-- a younger transaction and append after it had committed, yet sort before it (`npm run sim --
-- --store pg` caught a claim journaled before the send of its message, and slot counts replaying
-- out of order). Now `tx` is drawn as the event is inserted (the last statement before COMMIT,
-- coalesced-writes.ts): the next xid not yet assigned, and at least one above the transaction's
-- own. The first makes it later than every commit the transaction saw; the second keeps it above
-- every still-running writer's xid, which is what the readers' horizon needs
-- (`tx <= pg_snapshot_xmin(pg_current_snapshot())`, repositories/events.ts). Rows written before
-- have smaller values than any drawn now, so positions keep increasing. docs/event-journal.md.
ALTER TABLE events ALTER COLUMN tx SET DEFAULT greatest(
  pg_snapshot_xmax(pg_current_snapshot()),
  (pg_current_xact_id()::text::bigint + 1)::text::xid8
);
