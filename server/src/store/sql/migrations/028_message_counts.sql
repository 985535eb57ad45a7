-- Backlog counts kept in the same transaction as the messages they count, so that no request
-- counts rows (issue 28). Before, every submit and send counted the READY and CLAIMED rows of its
-- mailbox and of its space up to their caps: 0.59 ms per submit at a few thousand rows, 36 ms at
-- 50,000, growing with the backlog. Now they read at most 64 rows per count, whatever the backlog.
--
-- mailbox_id '' is the space's total, kept beside each mailbox's own row so that a space-wide
-- count does not sum across mailboxes. `slot` spreads concurrent writers: each transaction adds
-- its deltas to the row of its backend (pg_backend_pid() % 64), so two committing transactions
-- rarely wait on one counter row; a reader sums the slots. Rows are only ever adjusted by deltas
-- from the triggers below (or built from scratch by this migration), never written by the store.
--
-- live       READY or CLAIMED messages (what a backlog limit counts);
-- live_tasks READY or CLAIMED deliveries of tasks (a task is PENDING or RUNNING exactly then:
--            the plan's active tasks);
-- claimed    CLAIMED messages (leases out, the plan's agents at once);
-- dead       DEAD messages (the metrics census and diagnostics).
CREATE TABLE message_counts (
  space_id    text COLLATE "C" NOT NULL,
  mailbox_id  text COLLATE "C" NOT NULL,
  slot        smallint NOT NULL,
  live        bigint NOT NULL,
  live_tasks  bigint NOT NULL,
  claimed     bigint NOT NULL,
  dead        bigint NOT NULL,
  PRIMARY KEY (space_id, mailbox_id, slot)
);

-- Each trigger adds the deltas of one statement's changed rows to the mailbox rows and the space
-- rows of this backend's slot: once per statement, not per row, so a batch of 100 pays for one
-- upsert per mailbox. A row's weights are written out in each function rather than taken from a
-- shared SQL function: one in FROM runs through the function executor once per row, and the
-- version that did took 0.10 to 0.12 ms per one-row statement (cost bench, pg_stat_statements).
-- A statement that changes no count (a lease renewal, an ACKED row deleted by retention) writes
-- nothing. Three functions because a
-- transition table exists only for the operations that have it (no OLD TABLE on INSERT); the
-- upsert is the same in each.
CREATE FUNCTION baton_count_inserted_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- New rows count +1 in each count they belong to.
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(d.live), sum(d.live_tasks), sum(d.claimed), sum(d.dead)
  FROM (
    SELECT space_id, mailbox_id, (state IN ('READY', 'CLAIMED'))::int AS live,
      (state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::int AS live_tasks,
      (state = 'CLAIMED')::int AS claimed, (state = 'DEAD')::int AS dead FROM inserted_rows
  ) d
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(d.live) <> 0 OR sum(d.live_tasks) <> 0 OR sum(d.claimed) <> 0 OR sum(d.dead) <> 0
  ON CONFLICT (space_id, mailbox_id, slot) DO UPDATE
    SET live = c.live + excluded.live, live_tasks = c.live_tasks + excluded.live_tasks,
        claimed = c.claimed + excluded.claimed, dead = c.dead + excluded.dead;
  RETURN NULL;
END $$;

CREATE FUNCTION baton_count_updated_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A row that moves from READY to CLAIMED counts -1 as READY and +1 as CLAIMED.
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(d.live), sum(d.live_tasks), sum(d.claimed), sum(d.dead)
  FROM (
    SELECT space_id, mailbox_id, (state IN ('READY', 'CLAIMED'))::int AS live,
      (state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::int AS live_tasks,
      (state = 'CLAIMED')::int AS claimed, (state = 'DEAD')::int AS dead FROM new_rows
    UNION ALL
    SELECT space_id, mailbox_id, -(state IN ('READY', 'CLAIMED'))::int AS live,
      -(state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::int AS live_tasks,
      -(state = 'CLAIMED')::int AS claimed, -(state = 'DEAD')::int AS dead FROM old_rows
  ) d
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(d.live) <> 0 OR sum(d.live_tasks) <> 0 OR sum(d.claimed) <> 0 OR sum(d.dead) <> 0
  ON CONFLICT (space_id, mailbox_id, slot) DO UPDATE
    SET live = c.live + excluded.live, live_tasks = c.live_tasks + excluded.live_tasks,
        claimed = c.claimed + excluded.claimed, dead = c.dead + excluded.dead;
  RETURN NULL;
END $$;

CREATE FUNCTION baton_count_deleted_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Deleted rows count -1 (retention deletes only finished rows, which weigh nothing live).
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(d.live), sum(d.live_tasks), sum(d.claimed), sum(d.dead)
  FROM (
    SELECT space_id, mailbox_id, -(state IN ('READY', 'CLAIMED'))::int AS live,
      -(state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::int AS live_tasks,
      -(state = 'CLAIMED')::int AS claimed, -(state = 'DEAD')::int AS dead FROM deleted_rows
  ) d
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(d.live) <> 0 OR sum(d.live_tasks) <> 0 OR sum(d.claimed) <> 0 OR sum(d.dead) <> 0
  ON CONFLICT (space_id, mailbox_id, slot) DO UPDATE
    SET live = c.live + excluded.live, live_tasks = c.live_tasks + excluded.live_tasks,
        claimed = c.claimed + excluded.claimed, dead = c.dead + excluded.dead;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_counted_on_insert AFTER INSERT ON messages
  REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION baton_count_inserted_messages();
CREATE TRIGGER messages_counted_on_update AFTER UPDATE ON messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION baton_count_updated_messages();
CREATE TRIGGER messages_counted_on_delete AFTER DELETE ON messages
  REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION baton_count_deleted_messages();

-- The counts of the messages already there, in slot 0.
INSERT INTO message_counts (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
SELECT d.space_id, k.mailbox_id, 0, sum(d.live), sum(d.live_tasks), sum(d.claimed), sum(d.dead)
FROM (
  SELECT space_id, mailbox_id, (state IN ('READY', 'CLAIMED'))::int AS live,
    (state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::int AS live_tasks,
    (state = 'CLAIMED')::int AS claimed, (state = 'DEAD')::int AS dead FROM messages
) d
CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
GROUP BY d.space_id, k.mailbox_id
HAVING sum(d.live) <> 0 OR sum(d.dead) <> 0;
