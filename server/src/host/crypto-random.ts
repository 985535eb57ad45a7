import { randomBytes, randomUUID } from 'node:crypto';
import type { Random } from '@baton/core';

/** The server's id and secret source: crypto-strong. */
export const cryptoRandom: Random = {
  uuid: () => randomUUID(),
  bytes: (length) => new Uint8Array(randomBytes(length)),
};
