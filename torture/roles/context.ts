import { createClient, fetchTransport, type BatonClient } from '@baton-coordination/runtime';
import seedrandom from 'seedrandom';
import { HistoryWriter } from '../history';

/** What the orchestrator hands a client process (as JSON in TORTURE_CLIENT). */
export interface ClientConfig {
  role: RoleName;
  /** Unique per incarnation: `worker1.2` is worker1's second process. */
  proc: string;
  origins: string[];
  apiKey: string;
  spaceId: string;
  scopeId: string;
  mailboxId: string;
  budgetId: string;
  allowanceId: string;
  claimKeys: string[];
  historyDir: string;
  seed: string;
  leaseSeconds: number;
}

export const roleNames = ['producer', 'worker', 'raw-worker', 'spender', 'claimer', 'consumer', 'reader'] as const;
export type RoleName = (typeof roleNames)[number];

/** A role's tools: its client (recording every exchange), its history, its own random stream. */
export interface RoleContext {
  config: ClientConfig;
  client: BatonClient;
  history: HistoryWriter;
  random: () => number;
  /** Set on SIGTERM: a role finishes its current step and returns. */
  stopping: () => boolean;
}

export function roleContext(config: ClientConfig, stopping: () => boolean): RoleContext {
  const history = new HistoryWriter(`${config.historyDir}/${config.proc}.jsonl`, config.proc);
  const random = seedrandom(`${config.seed}/${config.proc}`);
  const client = createClient({
    baseUrl: config.origins[0]!,
    apiKey: config.apiKey,
    spaceId: config.spaceId,
    transport: history.recordingTransport(config.origins, fetchTransport),
    // Short attempts: a paused server must not hold a client longer than a lease.
    timeoutMs: 2_000,
    retry: { maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 1_000, maxElapsedMs: 20_000 },
  });
  return { config, client, history, random, stopping };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `step` until the process is told to stop; a step's failure (after the client's retries) is noted and the loop goes on. */
export async function loop(ctx: RoleContext, step: (n: number) => Promise<void>): Promise<void> {
  for (let n = 1; !ctx.stopping(); n++) {
    try {
      await step(n);
    } catch (error) {
      ctx.history.note('step-failed', { n, error: error instanceof Error ? error.message : String(error) });
      await sleep(100);
    }
  }
}
