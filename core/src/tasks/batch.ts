import { eachItem, type ItemOutcome } from '../batches/items';
import type { BatonError } from '../errors';
import type { OpContext } from '../context';
import type { SendTarget } from '../messages/model';
import type { TaskSubmitBody } from '../schemas/tasks';
import { together } from '../store/together';
import type { Task } from './model';
import { governingRun } from '../runs/guard';
import type { Run } from '../runs/model';
import { submitWith, type Submitted } from './service';

/** What a submit-batch may still create under its plan's active tasks (docs/design/0015-batches.md, docs/design/0016-limits-and-retry-after.md). */
export interface CreateRoom {
  /** Items that may create a task, from the first. */
  room: number;
  /** What each creating item beyond them answers: its single route's refusal. */
  refusal: () => BatonError;
}

/**
 * submit-batch (docs/design/0015-batches.md): each item as POST /tasks would answer it, in order. The runs of
 * the items' scopes, the keys of every item and the mailboxes they name are read in one round
 * trip up front, and kept current as items run: a key an earlier item created is joined by a
 * later one, and a delivery an earlier item sent counts against the backlog limits of the next.
 * A submit fails, when it fails, before it writes (tasks/service.ts createTask), so no item
 * needs a savepoint. `creates`, when the plan caps active tasks: how many items may still create
 * one, and the refusal each further creating item answers (a join creates nothing and goes on).
 */
export async function submitMany(ctx: OpContext, bodies: readonly TaskSubmitBody[], creates?: CreateRoom): Promise<ItemOutcome<Submitted>[]> {
  const mailboxIds = [...new Set(bodies.map((b) => b.mailboxId))];
  const scopeIds = [...new Set(bodies.map((b) => b.scopeId))];
  const [runs, existing, targets] = await together(
    // Each scope's run first, locked against its end (docs/lock-order.md): an item under an ended run answers 409 by itself.
    together(...scopeIds.map((id) => governingRun(ctx, id))),
    ctx.tx.tasks.getByKeys(ctx.spaceId, bodies.map((b) => b.taskKey)),
    together(...mailboxIds.map((id) => ctx.tx.mailboxes.getForSend(ctx.spaceId, id, ctx.limits.maxBacklog))),
  );
  const byKey = new Map<string, Task>(existing.map((t) => [t.taskKey, t]));
  const targetOf = new Map<string, SendTarget | undefined>(mailboxIds.map((id, i) => [id, targets[i]]));
  const runOf = new Map<string, Run | undefined>(scopeIds.map((id, i) => [id, runs[i]]));
  let created = 0;
  return eachItem(ctx, bodies, () => false, async (body) => {
    if (creates && created >= creates.room && !byKey.has(body.taskKey)) throw creates.refusal();
    const target = targetOf.get(body.mailboxId);
    const submitted = await submitWith(ctx, body, runOf.get(body.scopeId), byKey.get(body.taskKey), target);
    if (submitted.created) {
      created += 1;
      byKey.set(body.taskKey, submitted.task);
      // The space's backlog is one count, read with each mailbox: the send counted it on its own target only.
      for (const other of targetOf.values()) if (other && other !== target) other.live.space += 1;
    }
    return submitted;
  });
}
