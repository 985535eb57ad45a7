import type { SimRandom } from './rng';

/**
 * Swarm testing for the workload (Groce et al., "Swarm testing", ISSTA 2012), as faults.ts does
 * for the faults: each seed draws a weight per agent kind, so some runs are crowded with one
 * kind and others have little or none of it. A run with every kind at its usual strength keeps
 * each kind from starving the others of the interleavings that find bugs; the swarm varies that.
 *
 * A weight scales how many agents of the kind run: 0 (off), 0.5 (light), 1 (as before) or 2
 * (heavy). The `--agents` workers are split between spenders and quota agents in proportion to
 * their weights. A few kinds are never off: at least one spender (the budgets' invariants), and
 * the janitor, the journal watcher and the task reaper are no workload but part of the oracle
 * (they void what crashed agents left, read the journal, own the task budget), so they always run.
 */
export const agentKinds = ['spender', 'quota', 'barrier', 'sender', 'mworker', 'follower', 'tsubmit', 'tworker', 'tcancel', 'gcoord', 'limited', 'claim', 'timer', 'run', 'reuser'] as const;

export type AgentKind = (typeof agentKinds)[number];

export type AgentWeights = Record<AgentKind, number>;

/** How many of each kind run at weight 1: the run as it was before weights. */
export const baseCounts: Record<Exclude<AgentKind, 'spender' | 'quota'>, number> = {
  barrier: 3,
  sender: 1,
  mworker: 2,
  follower: 2,
  tsubmit: 1,
  tworker: 4,
  tcancel: 1,
  gcoord: 3,
  limited: 2,
  claim: 3,
  timer: 1,
  run: 1,
  reuser: 1,
};

export const weightLevels = [0, 0.5, 1, 2] as const;

/** Every kind at weight 1: the workload as it was before the swarm. */
export const evenWeights: AgentWeights = Object.fromEntries(agentKinds.map((k) => [k, 1])) as AgentWeights;

/** At most this many kinds off in one run: the run still exercises most of the service. */
const maxOff = 3;

/** Draws the weights of a run: about one kind in ten off (at most three), the rest light, even or heavy. */
export function drawWeights(rng: SimRandom): AgentWeights {
  const weights = { ...evenWeights };
  let off = 0;
  for (const kind of agentKinds) {
    const r = rng.float();
    if (r < 0.1 && kind !== 'spender' && off < maxOff) {
      weights[kind] = 0;
      off++;
    } else weights[kind] = r < 0.4 ? 0.5 : r < 0.75 ? 1 : 2;
  }
  return weights;
}

/** How many agents of a fixed-size kind run: its usual count scaled, at least one unless off. */
export function countOf(weights: AgentWeights, kind: keyof typeof baseCounts): number {
  const w = weights[kind];
  return w === 0 ? 0 : Math.max(1, Math.round(baseCounts[kind] * w));
}

/**
 * The `--agents` workers split by weight: spenders and quota agents in proportion (at least one
 * spender). At weight 1 each this is about two spenders in three, as before.
 */
export function workerKinds(weights: AgentWeights, agents: number): ('spender' | 'quota')[] {
  const quotaShare = weights.quota === 0 ? 0 : weights.quota / (2 * weights.spender + weights.quota);
  const quota = Math.min(agents - 1, Math.round(agents * quotaShare));
  // Quota agents spread through the list (every k-th), as the i % 3 === 2 rule placed them.
  const kinds: ('spender' | 'quota')[] = [];
  for (let i = 0, placed = 0; i < agents; i++) {
    const due = Math.floor(((i + 1) * quota) / agents);
    if (due > placed) {
      kinds.push('quota');
      placed++;
    } else kinds.push('spender');
  }
  return kinds;
}

/** `spender=1,quota=0.5,...`: the form --weights takes and replay commands print. */
export function formatWeights(weights: AgentWeights): string {
  return agentKinds.map((k) => `${k}=${weights[k]}`).join(',');
}

export function parseWeights(text: string): AgentWeights {
  const weights = { ...evenWeights };
  for (const part of text.split(',').filter(Boolean)) {
    const [name, value] = part.split('=');
    const n = Number(value);
    if (!agentKinds.includes(name as AgentKind) || value === undefined || Number.isNaN(n) || n < 0 || (name === 'spender' && n === 0)) {
      throw new Error(`--weights: expected kind=weight (weight >= 0, spender > 0) with kinds ${agentKinds.join(', ')}, got ${part}`);
    }
    weights[name as AgentKind] = n;
  }
  return weights;
}

/** The kinds a run has on (weight above 0): the nightly summary counts the runs each kind was in. */
export function kindsOn(weights: AgentWeights): AgentKind[] {
  return agentKinds.filter((k) => weights[k] > 0);
}
