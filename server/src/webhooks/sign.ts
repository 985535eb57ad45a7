import { Webhook } from 'standardwebhooks';

/** The Standard Webhooks headers for one message: id, timestamp (seconds) and `v1,<signature>`. */
export function signedHeaders(secret: string, messageId: string, atMs: number, body: string): Record<string, string> {
  const at = new Date(atMs);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(atMs / 1000)),
    'webhook-signature': new Webhook(secret).sign(messageId, at, body),
  };
}
