import { claimHeld, coolingDown, eventTypes, fits, maxAttempts, rollWindow, type Clock, type SpaceCutoff, type Timer, type Tx } from '@baton/core';
import type { DispatcherOptions, Limits } from '@baton-coordination/server';
import type { HttpReply, HttpRequest } from '../http';
import { BatchAsOneLease, OperationsNeverStop, recoveryReserveIgnored } from './limits';
import type { RepositoryOverrides } from './planted-store';

/** The webhook receiver's delivery, as the dispatcher calls it. */
export type Deliver = NonNullable<DispatcherOptions['deliver']>;

/**
 * A known bug, planted at one of the seams the simulator owns: the store beneath the servers,
 * the network between agents and servers, the limits a server is handed, or the webhook
 * receiver. Production code holds no switch for any of them.
 */
export interface Plant {
  /** Store seam (planted-store.ts): repository methods the servers see in place of the real ones. */
  store?: (tx: Tx) => RepositoryOverrides;
  /** Network seam: a request as it reaches a server. */
  request?: (request: HttpRequest) => HttpRequest;
  /** Network seam: a reply as it leaves a server. */
  reply?: (request: HttpRequest, reply: HttpReply) => HttpReply;
  /** Limits seam (BatonOptions.limits): what each new server process enforces. */
  limits?: () => Limits;
  /** Webhook seam: the receiver's delivery as the dispatcher calls it. */
  deliver?: (deliver: Deliver) => Deliver;
}

interface PlantableBug {
  /** What goes wrong, as a user of the service would see it. */
  what: string;
  /** Which seam carries it. */
  seam: 'store' | 'network' | 'limits' | 'webhook receiver';
  plant(clock: Clock): Plant;
}

const isWatch = (request: HttpRequest): boolean => request.method === 'GET' && /^\/v1\/spaces\/[^/]+\/watch\?/.test(request.path);
const isEvents = (request: HttpRequest): boolean => request.method === 'GET' && /^\/v1\/spaces\/[^/]+\/events(\?|$)/.test(request.path);
const isVerdict = (request: HttpRequest, verdict: 'accept' | 'reject'): boolean => request.method === 'POST' && new RegExp(`^/v1/spaces/[^/]+/task-groups/[^/]+/tasks/[^/]+/${verdict}$`).test(request.path);
const withItems = (reply: HttpReply, items: (all: unknown[]) => unknown[]): HttpReply =>
  reply.statusCode === 200 && Array.isArray(reply.body?.items) ? { ...reply, body: { ...reply.body, items: items(reply.body.items) } } : reply;

/**
 * A network plant for a server that remembers too much: every request under a key carries
 * what the first request under that key carried (`keyOf` answers undefined for requests it
 * leaves alone; `partOf` and `withPart` read and replace the remembered part).
 */
function firstSeen<T>(keyOf: (request: HttpRequest) => string | undefined, partOf: (request: HttpRequest) => T, withPart: (request: HttpRequest, part: T) => HttpRequest): () => Plant {
  return () => {
    const first = new Map<string, T>();
    return {
      request: (request) => {
        const key = keyOf(request);
        if (key === undefined) return request;
        if (!first.has(key)) first.set(key, partOf(request));
        return withPart(request, first.get(key) as T);
      },
    };
  };
}

type SubmitBody = { taskKey?: unknown; input?: unknown } | undefined;
const isSubmit = (request: HttpRequest): boolean => request.method === 'POST' && /^\/v1\/spaces\/[^/]+\/tasks$/.test(request.path);

const bugs = {
  'settle-skips-reserved-update': {
    what: 'a settle moves funds to settled but leaves reserved as it was',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        budgets: {
          update: async (budget) => {
            const stored = await tx.budgets.get(budget.spaceId, budget.id);
            const settled = stored !== undefined && budget.settledMinor > stored.settledMinor;
            return tx.budgets.update(settled ? { ...budget, reservedMinor: stored.reservedMinor } : budget);
          },
        },
      }),
    }),
  },
  'settle-ignores-work-key': {
    what: 'a settle or void does not find the entry its workKey already made, and applies again',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        budgetEntries: {
          getByWorkKey: async () => undefined,
          // The entries' unique workKey would refuse the second row: it gets a key of its own.
          insert: async (entry) => {
            const taken = await tx.budgetEntries.getByWorkKey(entry.spaceId, entry.budgetId, entry.workKey);
            return tx.budgetEntries.insert(taken ? { ...entry, workKey: `${entry.workKey}#${entry.id.slice(0, 8)}` } : entry);
          },
        },
      }),
    }),
  },
  'idempotency-applies-twice': {
    what: 'the idempotency layer never finds the stored reply, so a retried request applies twice',
    seam: 'store',
    plant: () => ({ store: () => ({ idempotency: { get: async () => undefined } }) }),
  },
  'journal-drops-event': {
    what: 'GET /events drops the second event of every page (its cursor still moves past it)',
    seam: 'network',
    plant: () => ({ reply: (request, reply) => (isEvents(request) ? withItems(reply, (items) => items.filter((_e, i) => i !== 1)) : reply) }),
  },
  'allowance-skips-blocked-head': {
    what: 'serving an allowance line passes over a head that does not fit and grants those behind it',
    seam: 'store',
    plant: (clock) => ({
      store: (tx) => ({
        allowanceWaiters: {
          listWaiting: async (spaceId, allowanceId, limit) => {
            const line = await tx.allowanceWaiters.listWaiting(spaceId, allowanceId, limit);
            const allowance = await tx.allowances.get(spaceId, allowanceId);
            const nowMs = clock.now();
            const head = line.findIndex((w) => w.expiresAt > nowMs);
            // Passed over only with someone behind it: alone it is served as ever (and expires in its time).
            if (!allowance || head < 0 || head === line.length - 1) return line;
            const rolled = rollWindow(allowance, nowMs);
            const blocked = coolingDown(rolled, nowMs) || !fits(rolled, line[head]!.units);
            return blocked ? line.filter((_w, i) => i !== head) : line;
          },
        },
      }),
    }),
  },
  'allowance-never-grants': {
    what: 'serving an allowance line takes every waiter as unfit: nobody in line is ever granted, they only expire or leave',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        allowanceWaiters: {
          // Each waiter shown asking for more than any window holds; stored again as it was.
          listWaiting: async (spaceId, allowanceId, limit) => {
            const line = await tx.allowanceWaiters.listWaiting(spaceId, allowanceId, limit);
            const allowance = await tx.allowances.get(spaceId, allowanceId);
            return allowance ? line.map((w) => ({ ...w, units: w.units + allowance.unitsLimit })) : line;
          },
          update: async (waiter) => {
            const stored = await tx.allowanceWaiters.get(waiter.spaceId, waiter.id);
            return tx.allowanceWaiters.update(stored ? { ...waiter, units: stored.units } : waiter);
          },
        },
      }),
    }),
  },
  'allowance-wakes-at-ended-cooldown': {
    what: 'a served allowance line takes a cooldown that already ended as its wake time: the line stays due, swept again and again',
    seam: 'store',
    plant: (clock) => ({
      store: (tx) => ({
        allowances: {
          update: async (allowance) => {
            const ended = allowance.wakeAt !== null && allowance.cooldownUntil !== null && allowance.cooldownUntil <= clock.now();
            return tx.allowances.update(ended ? { ...allowance, wakeAt: allowance.cooldownUntil } : allowance);
          },
        },
      }),
    }),
  },
  'group-refuses-reject': {
    what: 'a reject verdict is held to the accept rule: a valid reject of a member that failed is refused as CONFLICT',
    seam: 'network',
    plant: () => ({ request: (request) => (isVerdict(request, 'reject') ? { ...request, path: request.path.replace(/\/reject$/, '/accept') } : request) }),
  },
  'task-key-ignores-input': {
    what: 'a submit of a taskKey that names a task joins it whatever its input, where another fingerprint must be refused',
    seam: 'network',
    plant: firstSeen(
      (request) => {
        const taskKey = (request.body as SubmitBody)?.taskKey;
        return isSubmit(request) && typeof taskKey === 'string' ? taskKey : undefined;
      },
      (request) => (request.body as SubmitBody)?.input,
      (request, input) => ({ ...request, body: { ...(request.body as object), input } }),
    ),
  },
  'idempotency-ignores-body': {
    what: 'the idempotency fingerprint leaves the body out: a key reused with another body replays the first reply',
    seam: 'network',
    plant: firstSeen(
      (request) => {
        const key = request.headers['idempotency-key'];
        return key === undefined || request.method !== 'POST' ? undefined : `${request.path} ${key}`;
      },
      (request) => request.body,
      (request, body) => ({ ...request, body }),
    ),
  },
  'barrier-counts-repeat-arrival': {
    what: 'an arrive counts an arrivalKey again that was already counted in the epoch',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        barriers: {
          getArrival: async () => undefined,
          // The arrivals' unique key would refuse the second row: the count moves without it.
          insertArrival: async (arrival) => {
            const counted = await tx.barriers.getArrival(arrival.spaceId, arrival.barrierId, arrival.epoch, arrival.arrivalKey);
            if (!counted) await tx.barriers.insertArrival(arrival);
          },
        },
      }),
    }),
  },
  'message-claims-leased': {
    what: 'a recv also claims a CLAIMED message whose lease is still live: two live leases, a double delivery',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        messages: {
          claimNext: async (c) => {
            const live = await tx.messages.list(c.spaceId, c.mailboxId, ['READY', 'CLAIMED'], null, 100_000);
            const oldest = live.find((m) => c.scopeIds.includes(m.scopeId));
            if (oldest?.state !== 'CLAIMED' || oldest.attempt >= maxAttempts) return tx.messages.claimNext(c);
            // Shown READY for the claim to take it again, the live lease as good as forgotten.
            await tx.messages.update({ ...oldest, state: 'READY', tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, claimed: null });
            const claimed = await tx.messages.claimNext(c);
            if (!claimed) await tx.messages.update(oldest);
            return claimed;
          },
        },
      }),
    }),
  },
  'admission-keeps-pool-units': {
    what: 'the end of an admitted claim does not give its pool units back',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        pools: { release: async (spaceId, id) => (await tx.pools.get(spaceId, id))! },
        // Nothing was given back, so nothing says it was.
        events: { append: (spaceId, nowMs, events) => tx.events.append(spaceId, nowMs, events.filter((e) => e.type !== eventTypes.poolUnitsReleased)) },
      }),
    }),
  },
  'group-decides-twice': {
    what: 'a DECIDED task group is read as undecided and sealed, so a later verdict or member end decides it again',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        taskGroups: {
          get: async (spaceId, id, options) => {
            const group = await tx.taskGroups.get(spaceId, id, options);
            return group?.state === 'DECIDED' ? { ...group, state: 'SEALED', outcome: null, outcomeReason: null, decidedAt: null } : group;
          },
        },
      }),
    }),
  },
  'batch-replay-reapplies': {
    what: 'a batch route retried with its Idempotency-Key runs its items again instead of replaying its reply',
    seam: 'network',
    plant: () => {
      let sent = 0;
      return {
        request: (request) => {
          const key = request.headers['idempotency-key'];
          if (request.method !== 'POST' || !request.path.endsWith('-batch') || key === undefined) return request;
          return { ...request, headers: { ...request.headers, 'idempotency-key': `${key}~${++sent}` } };
        },
      };
    },
  },
  'watch-skips-event': {
    what: 'GET /watch passes over the first event of every page it answers (its cursor still moves past it)',
    seam: 'network',
    plant: () => ({ reply: (request, reply) => (isWatch(request) ? withItems(reply, (items) => items.slice(1)) : reply) }),
  },
  'watch-ignores-aggregate': {
    what: 'GET /watch ignores the aggregate filter and answers events of every aggregate',
    seam: 'network',
    plant: () => ({
      request: (request) => {
        if (!isWatch(request)) return request;
        const [path, query] = request.path.split('?') as [string, string];
        const params = new URLSearchParams(query);
        params.delete('aggregate');
        return { ...request, path: `${path}?${params}` };
      },
    }),
  },
  'webhook-skips-event': {
    what: 'every fourth webhook delivery is reported delivered but never reaches the receiver',
    seam: 'webhook receiver',
    plant: () => {
      let attempts = 0;
      return {
        deliver: (deliver) => async (url, headers, body, options) =>
          ++attempts % 4 === 0 ? { ok: true, httpStatus: 200, error: null, responseBody: null, durationMs: 1 } : deliver(url, headers, body, options),
      };
    },
  },
  'batch-claims-past-agents-at-once': {
    what: "a claim batch (admit-batch, recv-batch) is checked as one lease and gets all it asks for whatever room the plan's agents at once leaves",
    seam: 'limits',
    plant: () => ({ limits: () => new BatchAsOneLease() }),
  },
  'recovery-reserve-ignored': {
    what: 'recovery calls are held to 80 % of a rate limit like every other call: the reserve is gone',
    seam: 'limits',
    plant: () => ({ limits: recoveryReserveIgnored }),
  },
  'operations-stop-ignored': {
    what: "Free's monthly operations never stop new work",
    seam: 'limits',
    plant: () => ({ limits: () => new OperationsNeverStop() }),
  },
  'retention-ignores-window': {
    what: 'the retention sweep takes every window as zero: finished tasks are tombstoned and the journal purged at once',
    seam: 'store',
    plant: (clock) => {
      const now = (cutoffs: readonly SpaceCutoff[]): SpaceCutoff[] => cutoffs.map((c) => ({ ...c, cutoffMs: clock.now() }));
      return {
        store: (tx) => ({
          tasks: { tombstoneFinished: (cutoffs, limit) => tx.tasks.tombstoneFinished(now(cutoffs), limit) },
          messages: { purgeFinished: (cutoffs, limit) => tx.messages.purgeFinished(now(cutoffs), limit) },
          claims: { purgeEnded: (cutoffs, limit) => tx.claims.purgeEnded(now(cutoffs), limit) },
          events: { purgeBefore: (cutoffs, limit) => tx.events.purgeBefore(now(cutoffs), limit) },
        }),
      };
    },
  },
  'claim-fencing-reused': {
    what: "an acquire leaves the key's fencing token where it was, so the next grant reuses it",
    seam: 'store',
    plant: () => ({ store: () => ({ claims: { advanceKey: async () => undefined } }) }),
  },
  'claim-ignores-held': {
    what: "an acquire does not see the key's live holder and takes the key anyway: two HELD claims of one key",
    seam: 'store',
    plant: (clock) => ({
      store: (tx) => ({
        claims: {
          getHeld: async (spaceId, claimKey, options) => {
            const held = await tx.claims.getHeld(spaceId, claimKey, options);
            return held && held.leaseExpiresAt > clock.now() ? undefined : held;
          },
        },
      }),
    }),
  },
  'claim-expired-still-held': {
    what: 'an acquire takes a HELD claim whose lease ran out but the sweep has not marked for live: CLAIM_HELD instead of the key',
    seam: 'store',
    plant: (clock) => ({
      store: (tx) => ({
        claims: {
          getHeld: async (spaceId, claimKey, options) => {
            const held = await tx.claims.getHeld(spaceId, claimKey, options);
            if (held && held.leaseExpiresAt <= clock.now()) throw claimHeld(held);
            return held;
          },
        },
      }),
    }),
  },
  'timer-fires-twice': {
    what: 'the timer sweep takes a timer it just fired as due again, and fires it a second time',
    seam: 'store',
    plant: () => {
      let firedLast: Timer[] = [];
      return {
        store: (tx) => ({
          timers: {
            claimDue: async (nowMs, limit) => {
              const due = await tx.timers.claimDue(nowMs, limit);
              const again = firedLast;
              firedLast = due;
              return [...due, ...again];
            },
            // The second firing finds its timer FIRED, a write the store's guard refuses: it writes nothing.
            update: async (timer) => {
              const stored = await tx.timers.get(timer.spaceId, timer.id);
              if (stored?.state !== 'FIRED') await tx.timers.update(timer);
            },
          },
        }),
      };
    },
  },
  'run-cancel-skips-tasks': {
    what: "a cancelled run's cascade finds none of its PENDING and RUNNING tasks",
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        tasks: {
          list: async (spaceId, scopeId, states, after, limit) =>
            states?.length === 2 && states.includes('PENDING') && states.includes('RUNNING') ? [] : tx.tasks.list(spaceId, scopeId, states, after, limit),
        },
      }),
    }),
  },
  'ended-run-takes-work': {
    what: 'a COMPLETED or CANCELLED run is read as ACTIVE when work is created under its scopeId',
    seam: 'store',
    plant: () => ({
      store: (tx) => ({
        runs: {
          governing: async (spaceId, scopeId) => {
            const run = await tx.runs.governing(spaceId, scopeId);
            return run && { ...run, state: 'ACTIVE' };
          },
        },
      }),
    }),
  },
} satisfies Record<string, PlantableBug>;

export type PlantedBug = keyof typeof bugs;
export const plantableBugs = Object.keys(bugs) as PlantedBug[];

export function isPlantableBug(name: string): name is PlantedBug {
  return Object.hasOwn(bugs, name);
}

export function describeBug(bug: PlantedBug): Pick<PlantableBug, 'what' | 'seam'> {
  return { what: bugs[bug].what, seam: bugs[bug].seam };
}

/** The bug's plant for one run (a plant may count across the run, so each run gets its own). */
export function plantBug(bug: PlantedBug, clock: Clock): Plant {
  return (bugs[bug] as PlantableBug).plant(clock);
}
