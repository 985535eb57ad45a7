/**
 * A transaction lost a race it could only see at its write: a concurrent transaction committed
 * what this one had read as free (a taskKey). The write fails the transaction instead of
 * answering whether it took, so it can ride with the COMMIT (no round trip of its own, issue
 * 12), and every store runs the work again from the start, where its reads see the winner.
 * Nothing of the lost attempt commits. Never a client's mistake and never a bug: after
 * `maxRacedAttempts` lost races in a row the store gives up with CONFLICT, which a client may
 * retry.
 */
import { conflict, type BatonError } from '../errors';

export class TransactionRaced extends Error {
  override name = 'TransactionRaced';
}

/** Attempts of one transaction that keeps losing races before the store answers CONFLICT. */
export const maxRacedAttempts = 10;

/** What a client hears when its transaction lost `maxRacedAttempts` races in a row. */
export const racedTooOften = (last: Error): BatonError => conflict(`the request kept losing races to concurrent requests (${last.message}); retry`);
