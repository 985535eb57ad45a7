import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock';
import { Flusher, type ItemResult } from './flusher';

/** A send whose requests the test answers one by one. */
function controlledSend() {
  const requests: { items: number[]; answer: (results: ItemResult<number>[] | Error) => void }[] = [];
  const send = (items: number[]) =>
    new Promise<ItemResult<number>[]>((resolve, reject) => {
      requests.push({ items, answer: (results) => (results instanceof Error ? reject(results) : resolve(results)) });
    });
  return { requests, send };
}
const ok = (items: number[]): ItemResult<number>[] => items.map((value) => ({ ok: true, value: value * 10 }));
const turn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

describe('Flusher', () => {
  it('gathers what is added in one turn into one request, and answers each item with its own result', async () => {
    const { requests, send } = controlledSend();
    const flusher = new Flusher(send, systemClock, { maxItems: 100, delayMs: 0, maxInFlight: 2 });
    const answers = [1, 2, 3].map((n) => flusher.add(n));
    await turn();
    expect(requests.map((r) => r.items)).toEqual([[1, 2, 3]]);
    requests[0]!.answer(ok([1, 2, 3]));
    expect(await Promise.all(answers)).toEqual([{ ok: true, value: 10 }, { ok: true, value: 20 }, { ok: true, value: 30 }]);
  });

  it('sends a full request at once and never more than maxItems in one', async () => {
    const { requests, send } = controlledSend();
    const flusher = new Flusher(send, systemClock, { maxItems: 2, delayMs: 1_000, maxInFlight: 5 });
    for (const n of [1, 2, 3, 4, 5]) void flusher.add(n);
    expect(requests.map((r) => r.items)).toEqual([[1, 2], [3, 4]]);
    expect(flusher.waiting).toBe(1);
  });

  it('while maxInFlight requests are out, items gather for the next, which leaves when one answers', async () => {
    const { requests, send } = controlledSend();
    const flusher = new Flusher(send, systemClock, { maxItems: 100, delayMs: 0, maxInFlight: 1 });
    void flusher.add(1);
    await turn();
    for (const n of [2, 3, 4]) void flusher.add(n);
    await turn();
    expect(requests).toHaveLength(1);
    requests[0]!.answer(ok([1]));
    await turn();
    expect(requests.map((r) => r.items)).toEqual([[1], [2, 3, 4]]);
  });

  it('a request that fails whole answers every item it carried with that error', async () => {
    const { requests, send } = controlledSend();
    const flusher = new Flusher(send, systemClock, { maxItems: 100, delayMs: 0, maxInFlight: 1 });
    const answers = [1, 2].map((n) => flusher.add(n));
    await turn();
    const failure = new Error('network down');
    requests[0]!.answer(failure);
    expect(await Promise.all(answers)).toEqual([{ ok: false, error: failure }, { ok: false, error: failure }]);
  });

  it('a reply with the wrong number of items fails each item, never mismatching answers', async () => {
    const { requests, send } = controlledSend();
    const flusher = new Flusher(send, systemClock, { maxItems: 100, delayMs: 0, maxInFlight: 1 });
    const answers = [1, 2].map((n) => flusher.add(n));
    await turn();
    requests[0]!.answer(ok([1]));
    for (const answer of await Promise.all(answers)) expect(answer.ok).toBe(false);
  });
});
