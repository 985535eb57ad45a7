import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Verifying Baton's webhooks (Standard Webhooks). The signature is the `standardwebhooks`
 * library's, the one the server signs with: it decodes the `whsec_` secret and computes the
 * HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${body}`. What stays here is what the
 * library's own `verify` fixes and a receiver may need to set: the clock and the tolerance of
 * webhook-timestamp (the library reads Date.now() with 5 minutes; the simulator verifies on its
 * virtual clock), and a reason for each refusal instead of the library's messages. Verify the
 * raw body, before any JSON parsing: a re-serialized body does not verify.
 */

export type WebhookVerificationReason = 'MISSING_HEADERS' | 'BAD_SECRET' | 'BAD_TIMESTAMP' | 'TIMESTAMP_OUT_OF_TOLERANCE' | 'BAD_SIGNATURE' | 'BAD_PAYLOAD';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface VerifyWebhookOptions {
  /** How far webhook-timestamp may be from now, either way (replays and skewed clocks). Default 300, as Standard Webhooks. */
  toleranceSeconds?: number;
  /** Now, for tests and simulated clocks; Date.now() by default. */
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

function webhookOf(secret: string): Webhook {
  try {
    return new Webhook(secret);
  } catch (cause) {
    throw new WebhookVerificationError('BAD_SECRET', 'the secret is not whsec_ followed by base64', { cause });
  }
}

/** The signature header a sender computes (`v1,<base64>`), by the standardwebhooks library. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  return webhookOf(secret).sign(id, new Date(timestampSeconds * 1000), body);
}

/**
 * Checks a webhook's signature and timestamp; answers the parsed payload, or throws a
 * WebhookVerificationError saying what was wrong. Any one of several space-separated `v1,`
 * signatures may match (a secret being rotated).
 */
export function verifyWebhook<T = unknown>(secret: string, headers: WebhookHeaders, body: string | Uint8Array, options: VerifyWebhookOptions = {}): T {
  const webhook = webhookOf(secret);
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
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const expected = Buffer.from(webhook.sign(id, new Date(Number(timestamp) * 1000), text).slice('v1,'.length), 'base64');
  const matched = signatures.split(' ').some((candidate) => {
    const [version, signature] = candidate.split(',', 2);
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new WebhookVerificationError('BAD_SIGNATURE', 'no v1 signature matches');
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new WebhookVerificationError('BAD_PAYLOAD', 'the body is not JSON', { cause });
  }
}
