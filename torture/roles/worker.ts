import { createWorker } from '@baton-coordination/runtime';
import { sleep, type RoleContext } from './context';

/**
 * The runtime's worker loop, as users run it: admits in batches, renews, completes. Its handler
 * writes down what it returns before returning it, so the checker can tell a task's outcome came
 * from a worker (and from which delivery).
 */
export async function runWorker(ctx: RoleContext): Promise<void> {
  const { mailboxId, scopeId, proc, leaseSeconds } = ctx.config;
  const worker = createWorker({
    client: ctx.client,
    mailboxId,
    scopeId,
    holder: proc,
    concurrency: 8,
    leaseSeconds,
    waitMs: 1_000,
    admitBackoff: { baseMs: 100, maxMs: 1_000 },
    handler: async ({ delivery }) => {
      await sleep(ctx.random() * 200);
      const outcome = { by: proc, messageId: delivery.messageId, attempt: delivery.attempt };
      ctx.history.note('outcome', { taskId: delivery.taskId, outcome });
      return outcome;
    },
  });
  worker.start();
  while (!ctx.stopping()) await sleep(50);
  await worker.stop({ deadlineMs: 2_000 });
}
