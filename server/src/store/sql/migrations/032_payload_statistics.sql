-- No column statistics for the JSON that no statement filters, joins or sorts on (issue 28).
--
-- ANALYZE (the store's own of a queue table that doubled, sql-store.ts analyzeOutgrown, and
-- autovacuum's, which comes after every 10 % of a table's rows changed: on a queue, often) sorts
-- a sample of every column to build its most common values and histogram. For jsonb that means
-- comparing whole documents, and no plan ever reads the result: the store reads these columns
-- whole, by a row's key, and never looks inside them in SQL. Measured on PostgreSQL 15 with
-- 120,000 journal events: ANALYZE events took 135 ms, and 78 ms without statistics for `data`.
-- In the cost bench's batched run (20,000 jobs from a near-empty database), the store's
-- ANALYZEs of events, messages and tasks were 570 ms of PostgreSQL's time, 12 % of its CPU per
-- job (docs/benchmarks.md).
--
-- Columns that a predicate does read keep their statistics (keys, times, task states, and
-- `requirements`, whose IS NULL the claims and messages_ready_gated test), but for messages'
-- `state`, which has none since migration 012 for a reason of its own.
ALTER TABLE events ALTER COLUMN data SET STATISTICS 0;
ALTER TABLE tasks ALTER COLUMN input SET STATISTICS 0, ALTER COLUMN outcome SET STATISTICS 0;
ALTER TABLE messages ALTER COLUMN payload SET STATISTICS 0, ALTER COLUMN result SET STATISTICS 0, ALTER COLUMN claimed SET STATISTICS 0;
ALTER TABLE idempotency_keys ALTER COLUMN body SET STATISTICS 0;
