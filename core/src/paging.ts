import { BatonError } from './errors';

/**
 * Cursors of lists ordered by name: the last name of a page, base64url. A cursor this server
 * did not make is a client's mistake (VALIDATION_FAILED), never a 500. Every name-ordered list
 * (budgets, allowances, pools, work limits) pages with these.
 */
export const encodeNameCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');

export function decodeNameCursor(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (name.length === 0 || name.includes('\u0000') || encodeNameCursor(name) !== cursor) {
    throw new BatonError('VALIDATION_FAILED', 'cursor: not a cursor this list returned', [{ path: 'cursor', message: 'not a cursor this list returned' }]);
  }
  return name;
}
