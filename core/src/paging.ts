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

/** Position in a list ordered by (createdAt, id): barriers and task groups. */
export interface CreatedPosition {
  createdAt: number;
  id: string;
}

/** Cursors of lists ordered by (createdAt, id): the last item's position, base64url. */
export const encodePositionCursor = (p: CreatedPosition): string => Buffer.from(`${p.createdAt}:${p.id}`, 'utf8').toString('base64url');
const positionPattern = /^(\d{1,16}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function decodePositionCursor(cursor: string): CreatedPosition {
  const match = positionPattern.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const position = match ? { createdAt: Number(match[1]), id: match[2]! } : undefined;
  if (!position || encodePositionCursor(position) !== cursor) {
    throw new BatonError('VALIDATION_FAILED', 'cursor: not a cursor this list returned', [{ path: 'cursor', message: 'not a cursor this list returned' }]);
  }
  return position;
}
