import { baseUrl, CliFailure, send } from './http';

export interface TailOptions {
  cursor?: string;
  types?: string;
  scope?: string;
  follow?: boolean;
}

/** The longest wait the server grants a watch (docs/api.md "Fixed bounds": 0 to 30 s). */
const followWaitSeconds = 30;

/**
 * `journal tail`: the space's journal through GET /watch, one event per line (JSON, for jq),
 * from `cursor` (the start when unset). Without `follow` it stops once caught up and says on
 * stderr where to continue; with it, it long-polls until `signal` aborts (Ctrl-C).
 */
export async function tailJournal(env: NodeJS.ProcessEnv, options: TailOptions, out: (s: string) => void, err: (s: string) => void, signal?: AbortSignal): Promise<number> {
  const space = env.BATON_SPACE;
  const key = env.BATON_KEY;
  if (!space || !key) throw new CliFailure('set BATON_SPACE and BATON_KEY (the lines the server printed on first start)', undefined, 2);
  let cursor = options.cursor;
  for (;;) {
    const params = new URLSearchParams({ limit: '500', waitSeconds: String(options.follow ? followWaitSeconds : 0) });
    if (cursor !== undefined) params.set('cursor', cursor);
    if (options.types) params.set('types', options.types);
    if (options.scope) params.set('scopeId', options.scope);
    let reply;
    try {
      reply = await send(`${baseUrl(env)}/v1/spaces/${encodeURIComponent(space)}/watch?${params}`, { method: 'GET', token: key, ...(signal ? { signal } : {}) });
    } catch (error) {
      if (signal?.aborted) return 0;
      throw error;
    }
    if (!reply.ok) throw new CliFailure(`the server answered ${reply.status}`, reply);
    const page = reply.body as { items: unknown[]; nextCursor: string };
    for (const event of page.items) out(`${JSON.stringify(event)}\n`);
    cursor = page.nextCursor;
    if (!options.follow && page.items.length === 0) {
      err(`caught up; continue with --cursor ${cursor}\n`);
      return 0;
    }
  }
}
