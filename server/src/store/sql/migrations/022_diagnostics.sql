-- Diagnostics (docs/design/0018-diagnostics.md; server/src/store/sql/repositories/diagnostics.ts). Three partial or
-- narrow indexes so that every diagnostics read is a bounded range, never a walk of history.

-- GET /diagnostics/waits, tasks blocked at admission: the READY task deliveries that have
-- requirements (only those can find a resource short), in send order. Without it the read would
-- filter messages_ready_deliveries and could pass over any number of deliveries without
-- requirements. Cost: one more index entry when a delivery with requirements is sent or comes
-- back to READY (nack, lease expiry); nothing for plain messages or deliveries without
-- requirements (outside the predicate). A claim moves the row out of READY, and message updates
-- that change state are never HOT anyway (migration 016), so no update pays more than that.
CREATE INDEX messages_ready_gated ON messages (space_id, seq) WHERE state = 'READY' AND requirements IS NOT NULL;

-- GET /diagnostics/waits, barriers waiting: the WAITING barriers oldest first, without passing
-- over released and cancelled ones (barriers_by_created has no state). Cost: one entry per
-- barrier create and per epoch; an arrival that does not release changes neither state nor an
-- indexed column, so it stays a HOT update.
CREATE INDEX barriers_waiting ON barriers (space_id, created_at, id) WHERE state = 'WAITING';

-- GET /ops/runs/{scopeId}: a scope's reservations by state. Cost: one entry per reservation
-- (reserve, and admission of a task that reserves); scope_id never changes, so settle and void
-- keep whatever HOT updates they had.
CREATE INDEX reservations_by_scope ON reservations (space_id, scope_id);
