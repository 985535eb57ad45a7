import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhook, WebhookVerificationError } from './webhooks';

const secret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const nowMs = Date.UTC(2026, 0, 1, 12);
const body = JSON.stringify({ eventId: '42', type: 'task.succeeded', data: { n: 1 } });

function signed(at = nowMs): Record<string, string> {
  return { 'webhook-id': '42', 'webhook-timestamp': String(Math.floor(at / 1000)), 'webhook-signature': new Webhook(secret).sign('42', new Date(at), body) };
}

function reason(work: () => unknown): string | undefined {
  try {
    work();
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.reason;
    throw err;
  }
  return undefined;
}

describe('verifyWebhook', () => {
  it('verifies what the standardwebhooks library signed, and answers the payload', () => {
    expect(verifyWebhook(secret, signed(), body, { nowMs })).toEqual(JSON.parse(body));
    expect(verifyWebhook(secret, new Headers(signed()), Buffer.from(body), { nowMs })).toEqual(JSON.parse(body));
  });

  it('signs what the standardwebhooks library verifies', () => {
    const at = Date.now();
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(at / 1000)), 'webhook-signature': signWebhook(secret, 'msg_1', Math.floor(at / 1000), body) };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('accepts any one of several space-separated signatures', () => {
    const headers = signed();
    headers['webhook-signature'] = `v1,${Buffer.alloc(32).toString('base64')} v2,whatever ${headers['webhook-signature']}`;
    expect(verifyWebhook(secret, headers, body, { nowMs })).toEqual(JSON.parse(body));
  });

  it('refuses a tampered body, another secret, or a missing header', () => {
    expect(reason(() => verifyWebhook(secret, signed(), body.replace('42', '43'), { nowMs }))).toBe('BAD_SIGNATURE');
    expect(reason(() => verifyWebhook(`whsec_${Buffer.alloc(32, 6).toString('base64')}`, signed(), body, { nowMs }))).toBe('BAD_SIGNATURE');
    const { 'webhook-id': _, ...noId } = signed();
    expect(reason(() => verifyWebhook(secret, noId, body, { nowMs }))).toBe('MISSING_HEADERS');
  });

  it('refuses a secret that is not whsec_ and base64, and a signed body that is not JSON', () => {
    expect(reason(() => verifyWebhook('whsec_', signed(), body, { nowMs }))).toBe('BAD_SECRET');
    const notJson = 'not json';
    const headers = { ...signed(), 'webhook-signature': new Webhook(secret).sign('42', new Date(nowMs), notJson) };
    expect(reason(() => verifyWebhook(secret, headers, notJson, { nowMs }))).toBe('BAD_PAYLOAD');
  });

  it('refuses a timestamp outside the tolerance, either way', () => {
    expect(reason(() => verifyWebhook(secret, signed(nowMs - 301_000), body, { nowMs }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(reason(() => verifyWebhook(secret, signed(nowMs + 301_000), body, { nowMs }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(verifyWebhook(secret, signed(nowMs - 299_000), body, { nowMs })).toBeDefined();
    expect(reason(() => verifyWebhook(secret, signed(nowMs - 600_000), body, { nowMs, toleranceSeconds: 60 }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(reason(() => verifyWebhook(secret, { ...signed(), 'webhook-timestamp': 'soon' }, body, { nowMs }))).toBe('BAD_TIMESTAMP');
  });
});
