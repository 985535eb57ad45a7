import type { JournalEvent, Store } from '@baton/core';
import { readJournal } from '../checker';

/**
 * Barrier invariants: a barrier releases exactly when `target` distinct arrivalKeys arrived in
 * the epoch, and no arrival counts twice. Checked three ways: as replies arrive (what clients
 * were told, BarrierLedger), after steps against the store (checkBarrierStep), and at the end by
 * replaying the store's journal, which is written in the same transaction as every change
 * (checkBarriersFinal).
 */

/** A barrier view as the API returns it; arrive replies add `replay`. */
export interface BarrierReply {
  id: string;
  state: string;
  epoch: number;
  target: number;
  arrivals: number;
  replay?: boolean;
}

interface CountedArrival {
  barrierId: string;
  epoch: number;
  arrivalKey: string;
  session: string;
}

const arrivalId = (barrierId: string, epoch: number, arrivalKey: string): string => `${barrierId} ${epoch} ${arrivalKey}`;

/** What barrier clients were told, checked as each reply arrives. */
export class BarrierLedger {
  /** Arrivals a reply said were counted (replay false), by barrier, epoch and key. */
  readonly counted = new Map<string, CountedArrival>();

  constructor(private readonly violation: (message: string) => void) {}

  /** Every view must be consistent in itself: the release is exactly the full count. */
  viewed(barrierId: string, view: BarrierReply): BarrierReply {
    if (view.id !== barrierId) this.violation(`asked for barrier ${barrierId}, was answered barrier ${view.id}`);
    if (view.arrivals < 0 || view.arrivals > view.target) this.violation(`barrier ${barrierId}: ${view.arrivals} arrivals with target ${view.target} in epoch ${view.epoch}`);
    if ((view.state === 'RELEASED') !== (view.arrivals === view.target)) {
      this.violation(`barrier ${barrierId}: ${view.state} with ${view.arrivals} of ${view.target} arrived in epoch ${view.epoch}`);
    }
    return view;
  }

  /** An arrive reply that says it counted must be the first to say so for its key and epoch. */
  arrived(barrierId: string, arrivalKey: string, reply: BarrierReply, session: string): BarrierReply {
    this.viewed(barrierId, reply);
    if (reply.replay) return reply;
    const id = arrivalId(barrierId, reply.epoch, arrivalKey);
    const before = this.counted.get(id);
    if (before) this.violation(`arrivalKey ${arrivalKey} counted twice in epoch ${reply.epoch} of barrier ${barrierId} (told ${before.session}, then ${session})`);
    else this.counted.set(id, { barrierId, epoch: reply.epoch, arrivalKey, session });
    return reply;
  }
}

/** The store's own count agrees with the barrier row, and the row keeps the invariants. */
export async function checkBarrierStep(store: Store, spaceId: string, barrierIds: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  await store.read(async (tx) => {
    for (const id of barrierIds) {
      const b = await tx.barriers.get(spaceId, id);
      if (!b) {
        problems.push(`barrier ${id} is gone`);
        continue;
      }
      const stored = await tx.barriers.countArrivals(spaceId, id, b.epoch);
      if (stored !== b.arrivals) problems.push(`barrier ${id}: shows ${b.arrivals} arrivals in epoch ${b.epoch}, but ${stored} distinct arrivalKeys arrived`);
      if (b.arrivals > b.target) problems.push(`barrier ${id}: ${b.arrivals} arrivals with target ${b.target}`);
      if ((b.state === 'RELEASED') !== (b.arrivals === b.target)) problems.push(`barrier ${id}: ${b.state} with ${b.arrivals} of ${b.target} arrived in epoch ${b.epoch}`);
    }
  });
  return problems;
}

interface Replayed {
  target: number;
  epoch: number;
  state: string;
  keys: Set<string>;
}

/**
 * Replays each barrier's journal: arrivals count distinct keys of the epoch, the release comes
 * exactly with the arrival that reaches the target (never before, never missing), and the
 * moves follow the state table. Then the store's rows must equal the replay, and every arrival
 * a client was told counted must be in the journal (nothing acknowledged was lost).
 */
export async function checkBarriersFinal(store: Store, spaceId: string, barrierIds: readonly string[], ledger: BarrierLedger): Promise<string[]> {
  const problems: string[] = [];
  const journal = await readJournal(store, spaceId);
  const replayed = replayBarriers(journal, problems);
  await store.read(async (tx) => {
    for (const id of barrierIds) {
      const row = await tx.barriers.get(spaceId, id);
      const model = replayed.get(id);
      if (!row || !model) {
        problems.push(`barrier ${id}: ${row ? 'no barrier.created in the journal' : 'not in the store'}`);
        continue;
      }
      if (row.epoch !== model.epoch || row.state !== model.state || row.arrivals !== model.keys.size) {
        problems.push(`barrier ${id}: store has epoch ${row.epoch} ${row.state} ${row.arrivals}, journal says epoch ${model.epoch} ${model.state} ${model.keys.size}`);
      }
    }
  });
  const journaled = new Set(
    journal.filter((e) => e.type === 'barrier.arrived').map((e) => arrivalId(e.aggregateId, Number(e.data.epoch), String(e.data.arrivalKey))),
  );
  for (const [id, a] of ledger.counted) {
    if (!journaled.has(id)) problems.push(`arrival ${a.arrivalKey} in epoch ${a.epoch} of barrier ${a.barrierId} was acknowledged to ${a.session} but is not in the journal`);
  }
  return problems;
}

export function replayBarriers(journal: JournalEvent[], problems: string[]): Map<string, Replayed> {
  const barriers = new Map<string, Replayed>();
  /** Barriers whose last arrival reached the target: their next event must be the release. */
  const releaseDue = new Set<string>();
  for (const e of journal) {
    if (e.aggregateType !== 'barrier') continue;
    const id = e.aggregateId;
    if (releaseDue.has(id) && e.type !== 'barrier.released') problems.push(`barrier ${id}: ${e.type} came where the release of its full epoch was due`);
    if (e.type === 'barrier.created') {
      barriers.set(id, { target: Number(e.data.target), epoch: 1, state: 'WAITING', keys: new Set() });
      continue;
    }
    const b = barriers.get(id);
    if (!b) {
      problems.push(`barrier ${id}: ${e.type} before barrier.created`);
      continue;
    }
    const where = `barrier ${id} epoch ${b.epoch}`;
    switch (e.type) {
      case 'barrier.arrived': {
        const key = String(e.data.arrivalKey);
        if (Number(e.data.epoch) !== b.epoch) problems.push(`${where}: arrival of ${key} recorded for epoch ${e.data.epoch}`);
        if (b.state !== 'WAITING') problems.push(`${where}: ${key} counted while ${b.state}`);
        if (b.keys.has(key)) problems.push(`${where}: arrivalKey ${key} counted twice`);
        b.keys.add(key);
        if (Number(e.data.arrivals) !== b.keys.size) problems.push(`${where}: arrival of ${key} says ${e.data.arrivals} arrivals, ${b.keys.size} distinct keys arrived`);
        if (b.keys.size > b.target) problems.push(`${where}: ${b.keys.size} distinct keys arrived, target ${b.target}`);
        if (b.keys.size === b.target) releaseDue.add(id);
        break;
      }
      case 'barrier.released':
        if (!releaseDue.has(id)) problems.push(`${where}: released with ${b.keys.size} of ${b.target} distinct keys arrived`);
        releaseDue.delete(id);
        b.state = 'RELEASED';
        break;
      case 'barrier.cancelled':
        if (b.state !== 'WAITING') problems.push(`${where}: cancelled while ${b.state}`);
        b.state = 'CANCELLED';
        break;
      case 'barrier.epoch_advanced':
        if (b.state === 'WAITING') problems.push(`${where}: next epoch started while WAITING`);
        if (Number(e.data.epoch) !== b.epoch + 1) problems.push(`${where}: next epoch recorded as ${e.data.epoch}`);
        Object.assign(b, { epoch: b.epoch + 1, state: 'WAITING', keys: new Set<string>() });
        break;
      default:
        problems.push(`barrier ${id}: unknown event type ${e.type}`);
    }
  }
  for (const id of releaseDue) problems.push(`barrier ${id}: reached its target but was never released`);
  return barriers;
}
