/** One HTTP reply as the CLI shows it: the status and the parsed JSON body (or the raw text). */
export interface CliReply {
  ok: boolean;
  status: number;
  body: unknown;
}

/** A failure the CLI reports on stderr: 1 when the server is out of reach, 2 for a missing setting. */
export class CliFailure extends Error {
  constructor(message: string, readonly reply?: CliReply, readonly exitCode = 1) {
    super(message);
  }
}

export const defaultUrl = 'http://127.0.0.1:8080';

export const baseUrl = (env: NodeJS.ProcessEnv): string => (env.BATON_URL || defaultUrl).replace(/\/+$/, '');

/** Sends one request; a connection refused or reset becomes a CliFailure that says where it tried. */
export async function send(url: string, init: { method: string; token: string; body?: unknown; signal?: AbortSignal }): Promise<CliReply> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: { authorization: `Bearer ${init.token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  } catch (error) {
    if (init.signal?.aborted) throw error;
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    throw new CliFailure(`cannot reach ${new URL(url).origin}${cause} (is the server running? set BATON_URL)`);
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON: shown as text
  }
  return { ok: response.ok, status: response.status, body };
}
