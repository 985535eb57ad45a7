import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transport, TransportRequest } from '@baton-coordination/runtime';

/**
 * Jepsen's history, one file per client process: every HTTP exchange is written when it starts
 * (`invoke`) and when it ends (`ok` with the reply, or `info` when no reply came: the call may or
 * may not have happened). Each line is appended with a synchronous write, so a client SIGKILLed
 * mid-request leaves its invoke on disk without an end: the checker treats it as indeterminate.
 *
 * Roles add their own notes (`note`): what a worker's handler returned, a reader's restart.
 */

export type HistoryEntry =
  | { kind: 'invoke'; proc: string; call: number; atMs: number; method: string; path: string; idem: string | null; body: unknown }
  | { kind: 'ok'; proc: string; call: number; atMs: number; status: number; reply: unknown; retryAfter?: string }
  | { kind: 'info'; proc: string; call: number; atMs: number; error: string }
  | { kind: 'note'; proc: string; atMs: number; what: string; data: Record<string, unknown> };

/** One exchange as the checker sees it: `ended` is absent when the process died before an answer. */
export interface Call {
  proc: string;
  call: number;
  method: string;
  /** Below /v1/spaces/{spaceId}, query string included. */
  path: string;
  body: any;
  /** The Idempotency-Key: a client's retries of one logical call share it. */
  idem: string | null;
  invokedAtMs: number;
  /**
   * When the first attempt of this logical call (same proc and Idempotency-Key) was sent: a
   * retry may be answered by the replay of what an earlier attempt did, so what it reports
   * happened no earlier than this.
   */
  firstInvokedAtMs: number;
  /** Only when a reply came. */
  status?: number;
  reply?: any;
  /** The Retry-After header of a 429 or 503 reply, as sent (absent when it was missing). */
  retryAfter?: string;
  /** When the reply came, or when the attempt was seen to fail. */
  endedAtMs?: number;
}

export class HistoryWriter {
  private calls = 0;
  constructor(
    private readonly file: string,
    readonly proc: string,
  ) {}

  private write(entry: HistoryEntry): void {
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }

  note(what: string, data: Record<string, unknown>): void {
    this.write({ kind: 'note', proc: this.proc, atMs: Date.now(), what, data });
  }

  /**
   * A transport that records every attempt and spreads attempts over the servers: attempt n of
   * this process goes to `origins[n % origins.length]`, so a retry after a dead server reaches
   * the other one, as a client behind a load balancer would.
   */
  recordingTransport(origins: string[], inner: Transport): Transport {
    return async (request: TransportRequest) => {
      const call = ++this.calls;
      const url = new URL(request.url);
      const origin = origins[call % origins.length]!;
      const path = url.pathname.replace(/^\/v1\/spaces\/[^/]+/, '') + url.search;
      this.write({ kind: 'invoke', proc: this.proc, call, atMs: Date.now(), method: request.method, path, idem: request.headers['idempotency-key'] ?? null, body: request.body ? JSON.parse(request.body) : null });
      try {
        const response = await inner({ ...request, url: origin + url.pathname + url.search });
        const retryAfter = response.status === 429 || response.status === 503 ? response.headers['retry-after'] : undefined;
        this.write({ kind: 'ok', proc: this.proc, call, atMs: Date.now(), status: response.status, reply: response.body ? JSON.parse(response.body) : null, ...(retryAfter === undefined ? {} : { retryAfter }) });
        return response;
      } catch (error) {
        this.write({ kind: 'info', proc: this.proc, call, atMs: Date.now(), error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    };
  }
}

export interface History {
  calls: Call[];
  notes: Array<Extract<HistoryEntry, { kind: 'note' }>>;
}

/** Reads every `*.jsonl` of `dir`. A torn last line (the process died mid-write) is dropped. */
export function readHistory(dir: string): History {
  const calls = new Map<string, Call>();
  const notes: History['notes'] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl')).sort()) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      const entry = parseLine(line);
      if (entry) addEntry(calls, notes, entry);
    }
  }
  const sorted = [...calls.values()].sort((a, b) => a.invokedAtMs - b.invokedAtMs);
  const firstAttempt = new Map<string, number>();
  for (const call of sorted) {
    if (call.idem === null) continue;
    const key = `${call.proc}#${call.idem}`;
    call.firstInvokedAtMs = firstAttempt.get(key) ?? call.invokedAtMs;
    if (!firstAttempt.has(key)) firstAttempt.set(key, call.invokedAtMs);
  }
  return { calls: sorted, notes };
}

function parseLine(line: string): HistoryEntry | undefined {
  if (line.trim() === '') return undefined;
  try {
    return JSON.parse(line) as HistoryEntry;
  } catch {
    return undefined;
  }
}

function addEntry(calls: Map<string, Call>, notes: History['notes'], entry: HistoryEntry): void {
  if (entry.kind === 'note') {
    notes.push(entry);
    return;
  }
  const id = `${entry.proc}#${entry.call}`;
  if (entry.kind === 'invoke') {
    calls.set(id, { proc: entry.proc, call: entry.call, method: entry.method, path: entry.path, idem: entry.idem, body: entry.body, invokedAtMs: entry.atMs, firstInvokedAtMs: entry.atMs });
    return;
  }
  const call = calls.get(id);
  if (!call) return;
  call.endedAtMs = entry.atMs;
  if (entry.kind === 'ok') {
    call.status = entry.status;
    call.reply = entry.reply;
    if (entry.retryAfter !== undefined) call.retryAfter = entry.retryAfter;
  }
}
