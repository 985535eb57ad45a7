import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Verifying Baton's webhooks (Standard Webhooks) without a dependency: HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}` with the secret's bytes (the base64 after
 * `whsec_`), base64, compared in constant time with each `v1,` signature of the header
 * (several, space separated, while a secret rotates). Verify the raw body, before any JSON
 * parsing: a re-serialized body does not verify.
 */

export type WebhookVerificationReason = 'MISSING_HEADERS' | 'BAD_SECRET' | 'BAD_TIMESTAMP' | 'TIMESTAMP_OUT_OF_TOLERANCE' | 'BAD_SIGNATURE' | 'BAD_PAYLOAD';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyWebhookOptions {
  /** How far webhook-timestamp may be from now, either way (replays and skewed clocks). Default 300. */
  toleranceSeconds?: number;
  /** Now, for tests; Date.now() by default. */
  nowMs?: number;
}

/** Node's IncomingHttpHeaders, a plain record, or a fetch Headers. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/** The signature a sender computes: base64 HMAC-SHA256 of "id.timestamp.body". */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = secretBytes(secret);
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

function secretBytes(secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) throw new WebhookVerificationError('BAD_SECRET', 'the secret is not whsec_ followed by base64');
  return bytes;
}

/**
 * Checks a webhook's signature and timestamp; answers the parsed payload, or throws a
 * WebhookVerificationError saying what was wrong.
 */
export function verifyWebhook<T = unknown>(secret: string, headers: WebhookHeaders, body: string | Uint8Array, options: VerifyWebhookOptions = {}): T {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('MISSING_HEADERS', 'webhook-id, webhook-timestamp and webhook-signature are required');
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('BAD_TIMESTAMP', 'webhook-timestamp is not whole seconds');
  const toleranceSeconds = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.nowMs ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) {
    throw new WebhookVerificationError('TIMESTAMP_OUT_OF_TOLERANCE', `webhook-timestamp is more than ${toleranceSeconds} s from now`);
  }
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const expected = Buffer.from(signWebhook(secret, id, Number(timestamp), text).slice(3), 'base64');
  const matched = signatures.split(' ').some((candidate) => {
    const [version, signature] = candidate.split(',', 2);
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new WebhookVerificationError('BAD_SIGNATURE', 'no v1 signature matches');
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new WebhookVerificationError('BAD_PAYLOAD', 'the body is not JSON');
  }
}
