-- Guards of pipelined writes (server/src/store/sql/driver.ts, SqlQueryable.write): a write is
-- sent without waiting for its reply, so what must hold of it (an UPDATE changed exactly one
-- row) is checked in the statement itself. A failed guard fails the statement, which aborts the
-- transaction before its COMMIT; SQLSTATE BT000 reaches core as an InvariantViolation
-- (sql-store.ts): a bug in Baton, never a client's mistake.
CREATE FUNCTION baton_assert(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'BT000', MESSAGE = message;
  END IF;
  RETURN true;
END
$$;
