import type { OpContext } from '../context';
import type { Message } from '../messages/model';
import { together } from '../store/together';
import type { Task } from '../tasks/model';

/** A delivery as a batch locked it, with its task (undefined: no such message, or a plain message). */
export interface PreloadedDelivery {
  message: Message | undefined;
  task: Task | undefined;
}

/**
 * The deliveries a complete-, nack- or renew-batch names, locked in id order and read with their
 * tasks in one round trip, then handed to the batch's items one by one in place of each item's
 * own lock-and-read (a round trip per item otherwise).
 *
 * A delivery is handed out once: an item that names it again reads it afresh, behind the writes
 * of the earlier item (the row is this transaction's already). And an item whose task belongs to
 * a group may decide the group, which cancels other members' deliveries, perhaps ones later in
 * the batch: from that item on, every item reads afresh. Nothing else an item does changes
 * another delivery or task (a released resource, a published result are other rows), so what
 * is handed out is what a fresh read would answer.
 */
export class PreloadedDeliveries {
  private readonly handedOut = new Set<string>();
  private stale = false;

  private constructor(
    private readonly messages: ReadonlyMap<string, Message>,
    private readonly tasks: ReadonlyMap<string, Task>,
  ) {}

  /** Locks and reads `messageIds` (their tasks too unless `withTasks` is false: a renew needs none). */
  static async load(ctx: OpContext, messageIds: readonly string[], withTasks = true): Promise<PreloadedDeliveries> {
    const [messages, tasks] = await together(
      ctx.tx.messages.lockMany(ctx.spaceId, messageIds),
      withTasks ? ctx.tx.tasks.getByDeliveries(ctx.spaceId, messageIds) : Promise.resolve([]),
    );
    return new PreloadedDeliveries(new Map(messages.map((m) => [m.id, m])), new Map(tasks.map((t) => [t.id, t])));
  }

  /** The delivery as locked, or undefined when the item must lock and read it itself. */
  take(messageId: string): PreloadedDelivery | undefined {
    if (this.stale || this.handedOut.has(messageId)) return undefined;
    this.handedOut.add(messageId);
    const message = this.messages.get(messageId);
    const task = message?.taskId ? this.tasks.get(message.taskId) : undefined;
    if (task?.groupId != null) this.stale = true;
    return { message, task };
  }
}
