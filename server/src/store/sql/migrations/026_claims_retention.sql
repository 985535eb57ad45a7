-- Retention of claims (server/src/host/retention.ts): RELEASED and EXPIRED claims are deleted
-- after the plan window, per space, by when they ended. HELD claims are not in this index, so
-- acquires and renewals do not touch it; the claim_keys rows (fencing sequences) are never deleted.
CREATE INDEX claims_ended ON claims (space_id, ended_at) WHERE state <> 'HELD';
