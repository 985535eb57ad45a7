import type { DeliveryView, MailboxView, MessageView } from '../schemas/messages';
import { isoFromMs } from '../time';
import { claimedView } from '../admission/views';
import type { Mailbox, Message, NewMessage } from './model';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoFromMs(ms));

export function mailboxView(m: Mailbox): MailboxView {
  return {
    id: m.id,
    name: m.name,
    mode: m.mode,
    recipientId: m.recipientId,
    backlogLimit: m.backlogLimit,
    createdAt: isoFromMs(m.createdAt),
    updatedAt: isoFromMs(m.updatedAt),
  };
}

/** The message as listed: never the token (only its hash is stored anyway). */
/** A message as the API shows it (its seq is not shown: a just-sent one has none in hand yet). */
export function messageView(m: NewMessage): MessageView {
  return {
    id: m.id,
    mailboxId: m.mailboxId,
    scopeId: m.scopeId,
    state: m.state,
    payload: m.payload,
    workKey: m.workKey,
    deadline: isoOrNull(m.deadline),
    attempt: m.attempt,
    holder: m.holder,
    holderSession: m.holderSession,
    leaseExpiresAt: isoOrNull(m.leaseExpiresAt),
    createdAt: isoFromMs(m.createdAt),
    updatedAt: isoFromMs(m.updatedAt),
  };
}

/** The claimed message as recv returns it, with the token that only this reply ever shows. */
export function deliveryView(m: Message, token: string): DeliveryView {
  return {
    messageId: m.id,
    mailboxId: m.mailboxId,
    token,
    leaseExpiresAt: isoFromMs(m.leaseExpiresAt!),
    attempt: m.attempt,
    payload: m.payload,
    scopeId: m.scopeId,
    workKey: m.workKey,
    claimed: claimedView(m.claimed),
  };
}
