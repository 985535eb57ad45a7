/**
 * A worker that uppercases each task's input. Run it next to `npm start`:
 *
 *   npx tsx runtime/examples/worker.ts        # Ctrl-C (or SIGTERM) drains and exits
 *
 * Environment: BATON_URL, BATON_SPACE, BATON_KEY as printed by `npm start`; CONCURRENCY (4).
 */
import { hostname } from 'node:os';
import { createWorker, PermanentError } from '../src/worker';
import { exampleSetup } from './config';

const { client, scopeId, mailboxId } = await exampleSetup();

const worker = createWorker({
  client,
  mailboxId,
  scopeId,
  holder: `example-worker@${hostname()}:${process.pid}`,
  concurrency: Number(process.env.CONCURRENCY ?? 4),
  leaseSeconds: 30,
  handler: async ({ delivery, signal }) => {
    // Retrying a task whose input is not text cannot help: fail it for good.
    if (typeof delivery.input !== 'string') throw new PermanentError(`input must be a string, got ${typeof delivery.input}`);
    await pretendToWork(200, signal);
    return delivery.input.toUpperCase();
  },
  onEvent: (event) => {
    if (event.type === 'admitted') console.log(`admitted  ${event.delivery.taskId} attempt ${event.delivery.attempt}: ${JSON.stringify(event.delivery.input)}`);
    else if (event.type === 'completed') console.log(`completed ${event.taskId}`);
    else if (event.type === 'failed') console.log(`nacked    ${event.taskId} (retry ${event.retry}, ${event.reason})`);
    else if (event.type === 'lease_lost') console.log(`lease lost ${event.taskId} (${event.cause})`);
    else if (event.type === 'error') console.warn(`${event.stage} failed: ${String(event.error)}`);
  },
});

worker.installSignalHandlers({ deadlineMs: 10_000 });
worker.start();
console.log(`worker ${worker.holderSession} admitting from mailbox "examples" (${mailboxId}); Ctrl-C drains`);
await worker.done;
console.log('drained:', worker.stats);

/** Stands in for real work; it stops when the signal aborts, as real work should. */
function pretendToWork(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
