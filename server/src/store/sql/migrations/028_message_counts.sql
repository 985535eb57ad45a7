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

-- A message's weight in each count, +1 or -1 by `sign`: one definition for the three triggers.
CREATE FUNCTION baton_message_weight(state text, task_id text, sign integer,
  OUT live integer, OUT live_tasks integer, OUT claimed integer, OUT dead integer)
LANGUAGE sql IMMUTABLE AS $$
  SELECT sign * (state IN ('READY', 'CLAIMED'))::integer,
         sign * (state IN ('READY', 'CLAIMED') AND task_id IS NOT NULL)::integer,
         sign * (state = 'CLAIMED')::integer,
         sign * (state = 'DEAD')::integer
$$;

-- Each trigger adds the deltas of one statement's changed rows to the mailbox rows and the space
-- rows of this backend's slot: once per statement, not per row, so a batch of 100 pays for one
-- upsert per mailbox (measured about 0.07 ms per statement). A statement that changes no count (a
-- lease renewal, an ACKED row deleted by retention) writes nothing. Three functions because a
-- transition table exists only for the operations that have it (no OLD TABLE on INSERT); the
-- upsert is the same in each.
CREATE FUNCTION baton_count_inserted_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- New rows count +1.
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(w.live), sum(w.live_tasks), sum(w.claimed), sum(w.dead)
  FROM (SELECT space_id, mailbox_id, state, task_id, 1 AS sign FROM inserted_rows) d
  CROSS JOIN LATERAL baton_message_weight(d.state, d.task_id, d.sign) w
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(w.live) <> 0 OR sum(w.live_tasks) <> 0 OR sum(w.claimed) <> 0 OR sum(w.dead) <> 0
  ON CONFLICT (space_id, mailbox_id, slot) DO UPDATE
    SET live = c.live + excluded.live, live_tasks = c.live_tasks + excluded.live_tasks,
        claimed = c.claimed + excluded.claimed, dead = c.dead + excluded.dead;
  RETURN NULL;
END $$;

CREATE FUNCTION baton_count_updated_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A row that moves from READY to CLAIMED counts -1 as READY and +1 as CLAIMED.
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(w.live), sum(w.live_tasks), sum(w.claimed), sum(w.dead)
  FROM (
    SELECT space_id, mailbox_id, state, task_id, 1 AS sign FROM new_rows
    UNION ALL
    SELECT space_id, mailbox_id, state, task_id, -1 AS sign FROM old_rows
  ) d
  CROSS JOIN LATERAL baton_message_weight(d.state, d.task_id, d.sign) w
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(w.live) <> 0 OR sum(w.live_tasks) <> 0 OR sum(w.claimed) <> 0 OR sum(w.dead) <> 0
  ON CONFLICT (space_id, mailbox_id, slot) DO UPDATE
    SET live = c.live + excluded.live, live_tasks = c.live_tasks + excluded.live_tasks,
        claimed = c.claimed + excluded.claimed, dead = c.dead + excluded.dead;
  RETURN NULL;
END $$;

CREATE FUNCTION baton_count_deleted_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Deleted rows count -1 (retention deletes only finished rows, which weigh nothing live).
  INSERT INTO message_counts AS c (space_id, mailbox_id, slot, live, live_tasks, claimed, dead)
  SELECT d.space_id, k.mailbox_id, pg_backend_pid() % 64, sum(w.live), sum(w.live_tasks), sum(w.claimed), sum(w.dead)
  FROM (SELECT space_id, mailbox_id, state, task_id, -1 AS sign FROM deleted_rows) d
  CROSS JOIN LATERAL baton_message_weight(d.state, d.task_id, d.sign) w
  CROSS JOIN LATERAL (VALUES (d.mailbox_id), ('')) k(mailbox_id)
  GROUP BY d.space_id, k.mailbox_id
  HAVING sum(w.live) <> 0 OR sum(w.live_tasks) <> 0 OR sum(w.claimed) <> 0 OR sum(w.dead) <> 0
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
SELECT m.space_id, k.mailbox_id, 0, sum(w.live), sum(w.live_tasks), sum(w.claimed), sum(w.dead)
FROM messages m
CROSS JOIN LATERAL baton_message_weight(m.state, m.task_id, 1) w
CROSS JOIN LATERAL (VALUES (m.mailbox_id), ('')) k(mailbox_id)
GROUP BY m.space_id, k.mailbox_id
HAVING sum(w.live) <> 0 OR sum(w.dead) <> 0;
