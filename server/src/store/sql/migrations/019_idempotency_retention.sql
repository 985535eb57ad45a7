-- Retention of idempotency records (docs/design/0017-retention.md: 24 hours, the replay window). The purge
-- (repositories/idempotency.ts, purgeUntil) finds records by age. BRIN rather than B-tree:
-- records arrive in created_at order, so block ranges summarise them well, and the index costs
-- an idempotent request almost nothing (a B-tree would add an index insertion to every one).
CREATE INDEX idempotency_keys_created_brin ON idempotency_keys USING brin (created_at);
