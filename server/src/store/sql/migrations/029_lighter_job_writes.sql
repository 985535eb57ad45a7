-- What a job writes, cut to what a guarantee needs (issue 28).
--
-- messages_live indexed every READY and CLAIMED message for the backlog counts; message_counts
-- (migration 028) answers those now, so the index was one more entry written per send and per
-- claim for no reader.
DROP INDEX messages_live;

-- The foreign keys from messages and tasks to mailboxes guarded against a delivery in a mailbox
-- that does not exist. Mailboxes are never deleted and their ids never change, and every send
-- and submit reads its mailbox in the same transaction before it writes (getForSend), so the
-- keys caught nothing; each insert paid for them with a lookup of the mailbox and a FOR KEY SHARE
-- lock on its row: a tuple lock written to the WAL, and, with concurrent submitters on one
-- mailbox, a multixact on the mailbox's row per submit.
ALTER TABLE messages DROP CONSTRAINT messages_space_id_mailbox_id_fkey;
ALTER TABLE tasks DROP CONSTRAINT tasks_space_id_mailbox_id_fkey;
