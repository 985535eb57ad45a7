import seedrandom from 'seedrandom';

/**
 * The fault schedule, drawn whole from the seed before the run starts, so a failing seed names
 * the faults it ran through. Faults come one after another, each 0.5 to 2.5 s after the last
 * one ended; which kinds a run uses depends on its store.
 */
export const faultKinds = [
  /** SIGKILL a server, start it again 0.3 to 2 s later. */
  'server-kill',
  /** SIGSTOP a server longer than a lease (6 to 8 s), then SIGCONT. */
  'server-pause',
  /** SIGSTOP a worker, raw worker or claimer longer than a lease, then SIGCONT. */
  'client-pause',
  /** SIGKILL a client wherever it is (often mid-request); a new process takes its place. */
  'client-kill',
  /** PostgreSQL stopped with fast shutdown (sessions ended, checkpoint) and started again. */
  'pg-restart-fast',
  /** PostgreSQL stopped with immediate shutdown (a crash; recovery replays the WAL) and started again. */
  'pg-restart-immediate',
  /** Every backend of the servers' connections terminated. */
  'pg-cut',
] as const;
export type FaultKind = (typeof faultKinds)[number];

export interface Fault {
  kind: FaultKind;
  /** Which server or client, as an index the run maps onto its processes. */
  target: number;
  /** How long a pause lasts, or how long a killed server stays down. */
  durationMs: number;
  /** The pause before this fault, after the last one ended. */
  gapMs: number;
}

/** `cycle`: the kinds in the order given, round and round (a test that must see each kind); otherwise drawn at random. */
export function faultSchedule(seed: string, kinds: readonly FaultKind[], count: number, cycle = false): Fault[] {
  const random = seedrandom(`${seed}/faults`);
  const between = (lo: number, hi: number): number => Math.round(lo + random() * (hi - lo));
  return Array.from({ length: count }, (_, i) => {
    const kind = cycle ? kinds[i % kinds.length]! : kinds[Math.floor(random() * kinds.length)]!;
    const durationMs = kind === 'server-pause' || kind === 'client-pause' ? between(6_000, 8_000) : kind === 'server-kill' ? between(300, 2_000) : 0;
    return { kind, target: Math.floor(random() * 1_000), durationMs, gapMs: between(500, 2_500) };
  });
}

export const storeFaults = {
  pg: faultKinds,
  pglite: ['server-kill', 'server-pause', 'client-pause', 'client-kill'],
} as const satisfies Record<string, readonly FaultKind[]>;
