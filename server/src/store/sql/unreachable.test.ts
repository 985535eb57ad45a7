import { createServer } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { StoreUnavailable } from '@baton/core';
import { asStoreError, unreachableReason } from './unreachable';

const coded = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

describe('which PostgreSQL errors mean the store cannot be reached', () => {
  it('names a refused connection, as pg reports it for a port nobody listens on', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'nobody' });
    const error = await client.connect().then(() => undefined, (e: unknown) => e);
    expect(unreachableReason(error)).toBe('connection refused (ECONNREFUSED)');
    expect(asStoreError(error)).toBeInstanceOf(StoreUnavailable);
    expect((asStoreError(error) as StoreUnavailable).cause).toBe(error);
  });

  it.each([
    ['a backend ended by a shutdown or pg_terminate_backend', coded('57P01', 'terminating connection due to administrator command')],
    ['a crash of another backend', coded('57P02')],
    ['a database starting up or shutting down', coded('57P03', 'the database system is starting up')],
    ['no connection slot left', coded('53300', 'sorry, too many clients already')],
    ['any connection exception (class 08)', coded('08006')],
    ['a reset socket', coded('ECONNRESET')],
    ['a socket closed while writing', coded('EPIPE')],
    ['a timed-out connect', coded('ETIMEDOUT')],
    ['pg losing its connection mid-query', new Error('Connection terminated unexpectedly')],
    ['pg ended with queries pending', new Error('Connection terminated')],
    ['pg-pool waiting past connectionTimeoutMillis', new Error('timeout exceeded when trying to connect')],
    ['pg connecting past connectionTimeoutMillis', new Error('Connection terminated due to connection timeout')],
    ['a client whose connection already failed', new Error('Client has encountered a connection error and is not queryable')],
    ['every address of a host name refusing', new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect failed')],
  ])('counts %s as unreachable', (_what, error) => {
    expect(unreachableReason(error)).toEqual(expect.any(String));
    expect(asStoreError(error)).toBeInstanceOf(StoreUnavailable);
  });

  it.each([
    ['a unique violation', coded('23505', 'duplicate key value violates unique constraint')],
    ['a failed guard (baton_assert)', coded('BT000')],
    ['a lost race (baton_won)', coded('BT001')],
    ['a lock conflict', coded('55P03')],
    ['a syntax error: a bug', coded('42601')],
    ['a query cancelled by statement_timeout', coded('57014')],
    ['a TypeError: a bug', new TypeError("Cannot read properties of undefined (reading 'rows')")],
    ['a string thrown', 'Connection terminated'],
  ])('leaves %s alone (it stays INTERNAL, logged with its stack)', (_what, error) => {
    expect(unreachableReason(error)).toBeUndefined();
    expect(asStoreError(error)).toBe(error);
  });
});
