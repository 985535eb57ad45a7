import type { AddressInfo } from 'node:net';
import type { Clock, Plan, Store } from '@baton/core';
// The runtime's tests start a server; the runtime itself never imports it.
import { createBaton, openStore, type Baton } from '@baton-coordination/server';

/** A Baton server on embedded PGlite listening on a loopback port, with one organization, space and key. */
export interface LiveServer {
  baton: Baton;
  baseUrl: string;
  spaceId: string;
  apiKey: string;
  /** A POST to the operator API (/admin/v1). */
  admin(path: string, body: unknown): Promise<any>;
  /** Drains the server (which ends every connection left) and closes its store. */
  close(): Promise<void>;
}

export async function startLiveServer(options: { clock: Clock; plan: Plan; name: string }): Promise<LiveServer> {
  const adminToken = `${options.name}-admin`;
  const store: Store = await openStore({ kind: 'pglite' });
  const baton = await createBaton({ store, clock: options.clock, adminToken });
  await baton.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(baton.app.server.address() as AddressInfo).port}`;
  const admin = async (path: string, body: unknown): Promise<any> => {
    const response = await fetch(`${baseUrl}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`admin ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const org = await admin('/orgs', { name: options.name, plan: options.plan });
  const spaceId = (await admin(`/orgs/${org.id}/spaces`, { name: 'main' })).id as string;
  const apiKey = (await admin(`/orgs/${org.id}/keys`, { name: 'worker' })).secret as string;
  const close = async (): Promise<void> => {
    await baton.drainAndClose();
    await store.close();
  };
  return { baton, baseUrl, spaceId, apiKey, admin, close };
}
