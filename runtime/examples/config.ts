import { createClient, type BatonClient } from '../src/client';

/**
 * What both examples share: the connection `npm start` prints on first start (paste its three
 * export lines into your shell), the run's scope, and the "examples" mailbox.
 */

export interface ExampleSetup {
  client: BatonClient;
  scopeId: string;
  mailboxId: string;
}

/** The run both examples work in; any UUID does, as long as submitter and worker agree. */
const defaultScopeId = '00000000-0000-4000-8000-00000000e1a0';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set: start the server with \`npm start\` and paste the export lines it prints.`);
    process.exit(2);
  }
  return value;
}

export async function exampleSetup(): Promise<ExampleSetup> {
  const client = createClient({
    // server/src/config.ts: HOST 127.0.0.1, PORT 8080 unless set.
    baseUrl: process.env.BATON_URL ?? 'http://127.0.0.1:8080',
    spaceId: required('BATON_SPACE'),
    apiKey: required('BATON_KEY'),
  });
  // Create-or-get: the first example to start creates it, the other gets the same mailbox.
  const mailbox = await client.createMailbox({ name: 'examples' }, { idempotencyKey: 'examples-mailbox' });
  return { client, scopeId: process.env.BATON_SCOPE ?? defaultScopeId, mailboxId: mailbox.id };
}
