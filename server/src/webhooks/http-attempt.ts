import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { responseBodyMaxBytes } from '@baton/core';
import { blockedRule, BlockedAddressError, hostOf } from './ssrf';

export interface AttemptOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

export interface AttemptResult {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
  responseBody: string | null;
  durationMs: number;
}

/**
 * Resolves like dns.lookup, but fails when ANY address the name resolves to is refused
 * (ssrf.ts). Given to the request as its `lookup`, so the address checked is the address
 * connected to: a name that resolved to a public address at create and a private one now (DNS
 * rebinding) is refused at connect time.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!allowPrivate) {
        for (const a of addresses) {
          const rule = blockedRule(a.address);
          if (rule) return callback(new BlockedAddressError(hostname, a.address, rule), '', 0);
        }
      }
      if (options.all) return (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * One POST of one signed event. No redirect is followed (node's http does not): a 3xx is a
 * failure. Only 2xx succeeds. The reply body is kept up to responseBodyMaxBytes.
 */
export function attemptDelivery(url: string, headers: Record<string, string>, body: string, options: AttemptOptions): Promise<AttemptResult> {
  const started = performance.now();
  const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  const host = hostOf(url);
  // A literal IP is never looked up, so `lookup` would not see it: checked here instead.
  if (isIP(host) !== 0 && !options.allowPrivate) {
    const rule = blockedRule(host);
    if (rule) return Promise.resolve(done({ ok: false, httpStatus: null, error: new BlockedAddressError(host, host, rule).message, responseBody: null }));
  }
  const transport = url.startsWith('https:') ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: Omit<AttemptResult, 'durationMs'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(done(r));
    };
    const request = transport.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'Baton-Webhooks/1', ...headers },
        lookup: guardedLookup(options.allowPrivate),
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const status = response.statusCode ?? 0;
        const verdict = (): Omit<AttemptResult, 'durationMs'> => {
          const text = Buffer.concat(chunks).subarray(0, responseBodyMaxBytes).toString('utf8');
          const ok = status >= 200 && status < 300;
          const error = ok ? null : status >= 300 && status < 400 ? `redirect ${status} not followed` : `HTTP ${status}`;
          return { ok, httpStatus: status, error, responseBody: text.length > 0 ? text : null };
        };
        response.on('data', (chunk: Buffer) => {
          if (size >= responseBodyMaxBytes) return;
          chunks.push(chunk);
          size += chunk.length;
          // Enough kept: the rest of a large reply is not worth waiting for.
          if (size >= responseBodyMaxBytes) finish(verdict());
        });
        response.on('end', () => finish(verdict()));
        response.on('error', (err) => finish({ ok: false, httpStatus: status, error: err.message, responseBody: null }));
      },
    );
    const timer = setTimeout(() => finish({ ok: false, httpStatus: null, error: `timed out after ${options.timeoutMs} ms`, responseBody: null }), options.timeoutMs);
    request.on('error', (err) => finish({ ok: false, httpStatus: null, error: err.message, responseBody: null }));
    request.end(body);
  });
}
