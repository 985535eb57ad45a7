/**
 * How the client puts one HTTP exchange on the wire. A plain function so the simulator can
 * pass its faulty network (dropped, delayed or duplicated replies) and tests a fake, while
 * workers use `fetchTransport`. A transport makes exactly one attempt: retries, timeouts and
 * error envelopes are the client's business.
 */
export interface TransportRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Absolute URL, query string included. */
  url: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** JSON text; absent on GET. */
  body?: string;
  /** Aborted on the caller's abort or the attempt's timeout; a transport should stop then. */
  signal: AbortSignal;
}

export interface TransportResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The raw body text; '' when there is none (204). */
  body: string;
}

/**
 * Resolves with any HTTP reply, whatever its status; rejects only when no reply arrived
 * (connection refused or reset, DNS, abort).
 */
export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

/** The default transport: Node's global `fetch` (undici). */
export const fetchTransport: Transport = async (request) => {
  const response = await fetch(request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: request.signal,
  });
  // Reading the body is part of the exchange: it honours the same signal, so a timeout
  // during a slow body still ends the attempt.
  const body = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  return { status: response.status, headers, body };
};
