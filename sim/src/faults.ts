import type { SimRandom } from './rng';

/**
 * Per-run fault probabilities. Swarm testing: each seed draws which faults are on and how
 * often, so some runs hammer one fault and others see none of it, which finds more bugs than
 * every fault at a fixed middling rate.
 */
export interface Faults {
  /** A request or reply takes much longer than usual. */
  delay: number;
  /** A request is lost before the server sees it. */
  dropRequest: number;
  /** The server commits but the reply is lost. */
  dropReply: number;
  /** A request reaches the server twice. */
  duplicate: number;
  /** Per sweep tick: the server restarts (in-memory state lost, the store kept). */
  restart: number;
  /** Per sweep tick: the server drains, refuses new requests for a while, then restarts. */
  drain: number;
  /** Per agent step: the agent crashes mid-operation and comes back with no memory. */
  crash: number;
  /** Largest clock skew between an agent and the server, in ms. */
  skewMs: number;
}

export const faultNames = ['delay', 'dropRequest', 'dropReply', 'duplicate', 'restart', 'drain', 'crash', 'skewMs'] as const satisfies readonly (keyof Faults)[];

export const noFaults: Faults = { delay: 0, dropRequest: 0, dropReply: 0, duplicate: 0, restart: 0, drain: 0, crash: 0, skewMs: 0 };

const ceilings: Faults = { delay: 0.3, dropRequest: 0.15, dropReply: 0.15, duplicate: 0.15, restart: 0.05, drain: 0.03, crash: 0.02, skewMs: 30_000 };

export function drawFaults(rng: SimRandom): Faults {
  const faults = { ...noFaults };
  for (const name of faultNames) {
    // About one fault in three is off entirely in a given run.
    faults[name] = rng.chance(0.35) ? 0 : name === 'skewMs' ? rng.int(0, ceilings.skewMs) : rng.float() * ceilings[name];
  }
  return faults;
}

/** `delay=0.1,dropReply=0,...`: the form --faults takes and replay commands print. */
export function formatFaults(faults: Faults): string {
  return faultNames.map((n) => `${n}=${n === 'skewMs' ? faults[n] : Number(faults[n].toFixed(4))}`).join(',');
}

export function parseFaults(text: string): Faults {
  const faults = { ...noFaults };
  for (const part of text.split(',').filter(Boolean)) {
    const [name, value] = part.split('=');
    if (!faultNames.includes(name as keyof Faults) || value === undefined || Number.isNaN(Number(value))) {
      throw new Error(`--faults: expected name=value with names ${faultNames.join(', ')}, got ${part}`);
    }
    faults[name as keyof Faults] = Number(value);
  }
  return faults;
}
