import { baseUrl, CliFailure, send, type CliReply } from './http';

/** The operator API (/admin/v1) as the CLI calls it: BATON_URL and BATON_ADMIN_TOKEN from the environment. */
export class AdminApi {
  private readonly base: string;
  private readonly token: string;

  constructor(env: NodeJS.ProcessEnv) {
    const token = env.BATON_ADMIN_TOKEN;
    if (!token) throw new CliFailure("set BATON_ADMIN_TOKEN to the server's operator token (the server must be started with the same value)", undefined, 2);
    this.base = `${baseUrl(env)}/admin/v1`;
    this.token = token;
  }

  request(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<CliReply> {
    return send(`${this.base}${path}`, { method, token: this.token, body });
  }

  /** Every item of a paged list, following nextCursor: an operator's lists are short. */
  async all(path: string, query: Record<string, string | undefined> = {}): Promise<CliReply> {
    const items: unknown[] = [];
    let cursor: string | null = null;
    do {
      const params = new URLSearchParams({ limit: '500' });
      for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value);
      if (cursor !== null) params.set('cursor', cursor);
      const reply = await this.request('GET', `${path}?${params}`);
      if (!reply.ok) return reply;
      const page = reply.body as { items: unknown[]; nextCursor: string | null };
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return { ok: true, status: 200, body: items };
  }
}
