-- messages is a queue table: claims turn READY rows into CLAIMED and ACKED ones at hundreds a
-- second. Measured (issue 12, docs/benchmarks.md): the candidate claim is planned from
-- statistics taken when the queue was filling, which say nearly every row is READY; the planner
-- then walks messages_by_mailbox past every already-claimed row (3 ms at 3,000 of them, growing
-- with the queue) instead of messages_ready_deliveries. Fresh statistics make it pick the partial
-- index, and vacuum removes the index entries claimed rows left behind. So this table is
-- analyzed and vacuumed after 1,000 changed rows plus 1 %, not PostgreSQL's 50 plus 10 % (analyze)
-- and 50 plus 20 % (vacuum).
ALTER TABLE messages SET (
  autovacuum_analyze_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_scale_factor = 0.01
);
