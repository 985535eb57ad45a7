import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

/** The API client: every path, query and reply typed from the server's OpenAPI document. */
export type Api = ReturnType<typeof createClient<paths>>;

/** The error envelope every refusal carries (decisions: errors). */
export interface ApiErrorBody {
  error?: { code?: string; message?: string };
}

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function apiClient(key: string): Api {
  const client = createClient<paths>({ baseUrl: '' });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${key}`);
      return request;
    },
  };
  client.use(auth);
  return client;
}

/** The reply's data, or an ApiError with the envelope's code and message. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data !== undefined && result.response.ok) return result.data;
  const body = (result.error ?? {}) as ApiErrorBody;
  throw new ApiError(result.response.status, body.error?.code ?? 'UNKNOWN', body.error?.message ?? `the server answered ${result.response.status}`);
}
