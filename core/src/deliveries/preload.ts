import { assert } from '../assert';
import type { OpContext } from '../context';
import { notFound } from '../errors';
import type { LockedDelivery, Message } from '../messages/model';
import { together } from '../store/together';
import type { Task } from '../tasks/model';

/**
 * The deliveries a complete-, nack- or renew-batch names, locked in id order and read with their
 * tasks in one round trip, then handed to the batch's items one by one in place of each item's
 * own lock-and-read (a round trip per item otherwise): an item hands what it takes to the same
 * function its single route hands a fresh lock to (lifecycle.ts completeLocked, nackLocked;
 * messages/service.ts renewLocked).
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
    /** The tasks of the deliveries; null when the batch is a renew-batch, which moves no task. */
    private readonly tasks: ReadonlyMap<string, Task> | null,
  ) {}

  /** Locks and reads `messageIds` with their tasks (a complete- or nack-batch). */
  static async load(ctx: OpContext, messageIds: readonly string[]): Promise<PreloadedDeliveries> {
    const [messages, tasks] = await together(ctx.tx.messages.lockMany(ctx.spaceId, messageIds), ctx.tx.tasks.getByDeliveries(ctx.spaceId, messageIds));
    return new PreloadedDeliveries(new Map(messages.map((m) => [m.id, m])), new Map(tasks.map((t) => [t.id, t])));
  }

  /** Locks and reads `messageIds` alone (a renew-batch: a renew touches only its message). */
  static async loadMessages(ctx: OpContext, messageIds: readonly string[]): Promise<PreloadedDeliveries> {
    const messages = await ctx.tx.messages.lockMany(ctx.spaceId, messageIds);
    return new PreloadedDeliveries(new Map(messages.map((m) => [m.id, m])), null);
  }

  /**
   * The delivery with its task as the batch locked and read them; undefined when the item must
   * lock and read it itself (lifecycle.ts lockDelivery). NOT_FOUND, as that lock would answer,
   * for a message the batch found absent.
   */
  take(messageId: string): LockedDelivery | undefined {
    assert(this.tasks !== null, 'a renew-batch preload hands out no tasks');
    const message = this.takeMessage(messageId);
    if (message === undefined) return undefined;
    const task = message.taskId === null ? undefined : this.tasks.get(message.taskId);
    assert((task === undefined) === (message.taskId === null), `message ${messageId}: its task ${message.taskId} was not read with it`);
    if (task?.groupId != null) this.stale = true;
    return { message, task };
  }

  /** take for a renew-batch: the message alone. */
  takeMessage(messageId: string): Message | undefined {
    if (this.stale || this.handedOut.has(messageId)) return undefined;
    this.handedOut.add(messageId);
    const message = this.messages.get(messageId);
    if (message === undefined) throw notFound('message');
    return message;
  }
}
