import { randomUUID } from 'node:crypto';

/**
 * A tenant of a server process (test/support/server-process.ts), made and used over HTTP as an
 * operator and a client would: an organization with one space and one key.
 */
export interface ProcessTenant {
  spaceId: string;
  key: string;
}

export interface SpaceReply {
  status: number;
  body: any;
}

/** Makes an organization on `plan`, its space "main" and a key of it, through the operator API. */
export async function createProcessTenant(address: string, adminToken: string, name: string, plan: string): Promise<ProcessTenant> {
  const admin = async (path: string, body: unknown): Promise<any> => {
    const response = await fetch(`${address}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`admin ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const org = await admin('/orgs', { name, plan });
  const spaceId = (await admin(`/orgs/${org.id}/spaces`, { name: 'main' })).id as string;
  const key = (await admin(`/orgs/${org.id}/keys`, { name: 'k' })).secret as string;
  return { spaceId, key };
}

/** One call to the tenant's space; a POST carries a fresh Idempotency-Key. */
export async function spaceCall(address: string, tenant: ProcessTenant, method: 'GET' | 'POST', path: string, body?: unknown): Promise<SpaceReply> {
  const headers: Record<string, string> = { authorization: `Bearer ${tenant.key}` };
  if (method === 'POST') Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': randomUUID() });
  const response = await fetch(`${address}/v1/spaces/${tenant.spaceId}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}
