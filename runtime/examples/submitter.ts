/**
 * Submits N tasks to the "examples" mailbox and waits for their outcomes. Run a worker first
 * (runtime/examples/worker.ts), then:
 *
 *   npx tsx runtime/examples/submitter.ts [N]     # N defaults to 5
 *
 * Environment: BATON_URL, BATON_SPACE, BATON_KEY as printed by `npm start`.
 */
import { randomUUID } from 'node:crypto';
import { submitAndAwait } from '../src/helpers';
import { exampleSetup } from './config';

const { client, scopeId, mailboxId } = await exampleSetup();
const count = Number(process.argv[2] ?? 5);
// taskKey makes a submit create-or-join: a rerun of this batch would join the same tasks.
const batch = randomUUID().slice(0, 8);

const started = Date.now();
const tasks = await Promise.all(
  Array.from({ length: count }, (_, i) =>
    submitAndAwait(client, { scopeId, mailboxId, taskKey: `example-${batch}-${i}`, input: `hello ${i}` }, { timeoutMs: 120_000, pollMs: 250 }),
  ),
);
for (const task of tasks) console.log(`${task.taskKey}: ${task.state} ${JSON.stringify(task.outcome ?? task.failureReason)} (attempts ${task.attempts})`);
console.log(`${count} tasks in ${Date.now() - started} ms`);
