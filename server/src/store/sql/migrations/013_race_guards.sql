-- A speculative write's race check (core/src/store/raced.ts): a write sent without waiting for
-- its reply (a task insert riding with the COMMIT) that finds a concurrent transaction took what
-- this one read as free fails with SQLSTATE BT001, and the store runs the transaction again
-- (sql-store.ts). Unlike baton_assert (BT000, a bug), losing a race is expected under load.
CREATE FUNCTION baton_won(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'BT001', MESSAGE = message;
  END IF;
  RETURN true;
END
$$;
