import type { JournalEvent, Store } from '@baton/core';

/**
 * The task-group invariants (docs/design/0010-task-groups.md, docs/simulator.md "Task groups"): a group decides
 * exactly once and never changes its outcome; the outcome agrees with the verdicts and member
 * states at the moment of decision; no member joins a closed group and membership stays within
 * expectedMembers (else 100); a group whose condition is met does not stay undecided; a decided
 * group leaves no member task live. The oracle below is written from docs/design/0010-task-groups.md, not taken from
 * core, so a wrong rule in core shows up as a disagreement.
 */

/** The 100-member cap when expectedMembers is absent (core/src/groups/model.ts maxGroupMembers). */
const maxMembers = 100;
const terminalStates = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);
const isTerminal = (state: string): boolean => terminalStates.has(state);
const iso = (ms: number): string => new Date(ms).toISOString();

/** The task state each task event leaves behind. */
const taskStateAfter: Record<string, string> = {
  'task.submitted': 'PENDING',
  'task.running': 'RUNNING',
  'task.requeued': 'PENDING',
  'task.succeeded': 'SUCCEEDED',
  'task.failed': 'FAILED',
  'task.cancelled': 'CANCELLED',
  'task.expired': 'EXPIRED',
};

export interface GroupRule {
  condition: 'FIRST_ACCEPTED' | 'N_ACCEPTED' | 'ALL_TERMINAL';
  threshold: number | null;
  expectedMembers: number | null;
  deadlineMs: number | null;
}

export interface MemberStanding {
  verdict: string;
  taskState: string;
}

export interface Decision {
  outcome: 'SUCCEEDED' | 'FAILED';
  outcomeReason: string;
}

/** Members after which membership closes by itself. */
export const capOf = (rule: Pick<GroupRule, 'expectedMembers'>): number => rule.expectedMembers ?? maxMembers;

/**
 * What the rule of docs/design/0010-task-groups.md says of a group now, the deadline aside (the sweep applies it within a
 * tick, so it is checked on its own): undefined while undecided.
 */
export function ruleSays(rule: GroupRule, closed: boolean, members: readonly MemberStanding[]): Decision | undefined {
  if (rule.condition === 'ALL_TERMINAL') return closed && members.every((m) => isTerminal(m.taskState)) ? { outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' } : undefined;
  const threshold = rule.threshold ?? 1;
  const accepted = members.filter((m) => m.verdict === 'ACCEPTED').length;
  if (accepted >= threshold) return { outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' };
  // Accept needs SUCCEEDED: a live member may still get there, a member that ended otherwise never;
  // while membership is open, members may still join up to the cap. Short of the threshold even so: it can no longer be met.
  const possible = members.filter((m) => m.verdict === 'PENDING' && (m.taskState === 'SUCCEEDED' || !isTerminal(m.taskState))).length;
  const mayJoin = closed ? 0 : Math.max(0, capOf(rule) - members.length);
  return accepted + possible + mayJoin < threshold ? { outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' } : undefined;
}

/** The standing that explains a decision in a violation message. */
function standing(rule: GroupRule, closed: boolean, members: readonly MemberStanding[]): string {
  const count = (f: (m: MemberStanding) => boolean): number => members.filter(f).length;
  return `${rule.condition}${rule.threshold === null ? '' : ` threshold ${rule.threshold}`}, ${closed ? 'closed' : 'open'}, ${members.length} members: ${count((m) => m.verdict === 'ACCEPTED')} accepted, ${count((m) => m.verdict === 'REJECTED')} rejected, ${count((m) => isTerminal(m.taskState))} terminal, ${count((m) => m.taskState === 'SUCCEEDED')} succeeded`;
}

// ---------------------------------------------------------------------------------------------
// The journal replay

export interface ReplayedGroup {
  id: string;
  rule: GroupRule;
  closed: boolean;
  /** Member task ids in join order, with their verdicts. */
  members: Map<string, { verdict: string }>;
  /** The first decision, as the journal has it; later ones are violations. */
  decided: (Decision & { atMs: number }) | null;
  decisions: number;
  /** What the rule said after the group's last event, while undecided: a decision must follow in that transaction. */
  due: Decision | undefined;
}

export interface GroupReplay {
  groups: Map<string, ReplayedGroup>;
  /** Every task's state as the journal leaves it. */
  taskStates: Map<string, string>;
}

/**
 * Replays the journal's group.* and task.* events in commit order (the memory store runs one
 * transaction at a time; a transaction's events are appended in order, a member's end before the
 * group's decision it causes, the decision before the cancels of live members).
 */
export function replayGroups(journal: readonly JournalEvent[], problems: string[]): GroupReplay {
  const replay: GroupReplay = { groups: new Map(), taskStates: new Map() };
  const groupOfTask = new Map<string, string>();
  for (const e of journal) {
    if (e.aggregateType === 'task') {
      const next = taskStateAfter[e.type];
      if (next === undefined) continue;
      replay.taskStates.set(e.aggregateId, next);
      const g = replay.groups.get(groupOfTask.get(e.aggregateId) ?? '');
      if (g) afterChange(g, e, replay, problems);
      continue;
    }
    if (e.aggregateType !== 'group') continue;
    if (e.type === 'group.created') {
      onCreated(e, replay, problems);
      afterChange(replay.groups.get(e.aggregateId)!, e, replay, problems);
      continue;
    }
    const g = replay.groups.get(e.aggregateId);
    if (!g) {
      problems.push(`group ${e.aggregateId}: ${e.type} before group.created`);
      continue;
    }
    switch (e.type) {
      case 'group.member_added':
        onMemberAdded(e, g, replay, groupOfTask, problems);
        break;
      case 'group.sealed':
        onSealed(e, g, problems);
        break;
      case 'group.verdict':
        onVerdict(e, g, replay, problems);
        break;
      case 'group.decided':
        onDecided(e, g, replay, problems);
        continue;
    }
    afterChange(g, e, replay, problems);
  }
  for (const g of replay.groups.values()) if (g.due && !g.decided) problems.push(`group ${g.id}: its condition was met (${g.due.outcome} ${g.due.outcomeReason}) at the end of the journal but it never decided`);
  return replay;
}

function onCreated(e: JournalEvent, replay: GroupReplay, problems: string[]): void {
  if (replay.groups.has(e.aggregateId)) problems.push(`group ${e.aggregateId} created twice`);
  const d = e.data;
  const rule: GroupRule = {
    condition: d.condition as GroupRule['condition'],
    threshold: d.threshold === null || d.threshold === undefined ? null : Number(d.threshold),
    expectedMembers: d.expectedMembers === null || d.expectedMembers === undefined ? null : Number(d.expectedMembers),
    deadlineMs: d.deadline === null || d.deadline === undefined ? null : Date.parse(String(d.deadline)),
  };
  replay.groups.set(e.aggregateId, { id: e.aggregateId, rule, closed: false, members: new Map(), decided: null, decisions: 0, due: undefined });
}

function onMemberAdded(e: JournalEvent, g: ReplayedGroup, replay: GroupReplay, groupOfTask: Map<string, string>, problems: string[]): void {
  const taskId = String(e.data.taskId);
  const at = iso(e.occurredAt);
  if (g.decided) problems.push(`group ${g.id}: task ${taskId} joined at ${at} after the group decided`);
  else if (g.closed) problems.push(`group ${g.id}: task ${taskId} joined at ${at} after membership closed`);
  const other = groupOfTask.get(taskId);
  if (other !== undefined) problems.push(`task ${taskId} joined group ${g.id} at ${at} while a member of group ${other}`);
  g.members.set(taskId, { verdict: 'PENDING' });
  groupOfTask.set(taskId, g.id);
  if (g.members.size > capOf(g.rule)) problems.push(`group ${g.id}: ${g.members.size} members at ${at}, above ${g.rule.expectedMembers === null ? `the cap of ${maxMembers}` : `expectedMembers ${g.rule.expectedMembers}`}`);
  if (Number(e.data.position) !== g.members.size) problems.push(`group ${g.id}: task ${taskId} joined at position ${String(e.data.position)}, the journal counts ${g.members.size}`);
  const known = replay.taskStates.get(taskId);
  if (known !== undefined && known !== e.data.taskState) problems.push(`group ${g.id}: task ${taskId} joined as ${String(e.data.taskState)}, the journal has it ${known}`);
  if (known === undefined) replay.taskStates.set(taskId, String(e.data.taskState));
}

function onSealed(e: JournalEvent, g: ReplayedGroup, problems: string[]): void {
  const cause = String(e.data.cause);
  if (g.decided || g.closed) problems.push(`group ${g.id}: sealed (${cause}) at ${iso(e.occurredAt)} when already ${g.decided ? 'DECIDED' : 'SEALED'}`);
  if (cause === 'EXPECTED_MEMBERS' && g.members.size !== g.rule.expectedMembers) problems.push(`group ${g.id}: sealed for EXPECTED_MEMBERS with ${g.members.size} members, expectedMembers ${g.rule.expectedMembers}`);
  if (cause === 'MAX_MEMBERS' && (g.members.size !== maxMembers || g.rule.expectedMembers !== null)) problems.push(`group ${g.id}: sealed for MAX_MEMBERS with ${g.members.size} members`);
  g.closed = true;
}

function onVerdict(e: JournalEvent, g: ReplayedGroup, replay: GroupReplay, problems: string[]): void {
  const taskId = String(e.data.taskId);
  const verdict = String(e.data.verdict);
  const member = g.members.get(taskId);
  if (!member) return void problems.push(`group ${g.id}: verdict ${verdict} on task ${taskId}, which is not a member`);
  if (member.verdict !== 'PENDING') problems.push(`group ${g.id}: member ${taskId} got ${verdict} at ${iso(e.occurredAt)} after ${member.verdict}; a verdict is final`);
  const state = replay.taskStates.get(taskId) ?? 'unknown';
  if (verdict === 'ACCEPTED' && state !== 'SUCCEEDED') problems.push(`group ${g.id}: member ${taskId} ACCEPTED at ${iso(e.occurredAt)} while ${state}`);
  if (verdict === 'REJECTED' && !isTerminal(state)) problems.push(`group ${g.id}: member ${taskId} REJECTED at ${iso(e.occurredAt)} while ${state}`);
  member.verdict = verdict;
}

/**
 * Exactly one decision per group, and it agrees with the group at that moment: the deadline
 * decides first once passed; otherwise the outcome is what the rule says of the verdicts and
 * member states the journal has so far.
 */
function onDecided(e: JournalEvent, g: ReplayedGroup, replay: GroupReplay, problems: string[]): void {
  const d: Decision = { outcome: e.data.outcome as Decision['outcome'], outcomeReason: String(e.data.outcomeReason) };
  const at = iso(e.occurredAt);
  g.decisions++;
  if (g.decided) {
    problems.push(`group ${g.id} decided twice: ${d.outcome} ${d.outcomeReason} at ${at} after ${g.decided.outcome} ${g.decided.outcomeReason} at ${iso(g.decided.atMs)}`);
    return;
  }
  const members = membersOf(g, replay);
  const now = standing(g.rule, g.closed, members);
  const from = g.closed ? 'SEALED' : 'OPEN';
  if (e.data.from !== from) problems.push(`group ${g.id}: decided from ${String(e.data.from)} at ${at}, the journal has it ${from}`);
  const deadlinePassed = g.rule.deadlineMs !== null && e.occurredAt >= g.rule.deadlineMs;
  if (d.outcomeReason === 'DEADLINE_EXCEEDED') {
    if (!deadlinePassed || d.outcome !== 'FAILED') problems.push(`group ${g.id}: decided ${d.outcome} DEADLINE_EXCEEDED at ${at}, deadline ${g.rule.deadlineMs === null ? 'none' : iso(g.rule.deadlineMs)}`);
  } else if (deadlinePassed) {
    problems.push(`group ${g.id}: decided ${d.outcome} ${d.outcomeReason} at ${at}, after its deadline ${iso(g.rule.deadlineMs!)} passed (the deadline decides first)`);
  } else {
    const says = ruleSays(g.rule, g.closed, members);
    if (says?.outcome !== d.outcome || says.outcomeReason !== d.outcomeReason) problems.push(`group ${g.id}: decided ${d.outcome} ${d.outcomeReason} at ${at} but the rule says ${says ? `${says.outcome} ${says.outcomeReason}` : 'undecided'} (${now})`);
  }
  const counts = { members: members.length, accepted: members.filter((m) => m.verdict === 'ACCEPTED').length, rejected: members.filter((m) => m.verdict === 'REJECTED').length, terminal: members.filter((m) => isTerminal(m.taskState)).length, succeeded: members.filter((m) => m.taskState === 'SUCCEEDED').length };
  for (const [name, n] of Object.entries(counts)) if (Number(e.data[name]) !== n) problems.push(`group ${g.id}: group.decided at ${at} says ${name} ${String(e.data[name])}, the journal has ${n} (${now})`);
  g.decided = { ...d, atMs: e.occurredAt };
  g.due = undefined;
}

/**
 * After a change to an undecided group (a join, seal, verdict or member task event), a decision
 * the rule already called for must have come right after the previous change, in its own
 * transaction: the group decides the moment its condition is met or becomes unreachable.
 */
function afterChange(g: ReplayedGroup, e: JournalEvent, replay: GroupReplay, problems: string[]): void {
  if (g.decided) return;
  // The join that fills membership seals it in its own transaction, before the rule runs.
  const sealsTheJoin = e.type === 'group.sealed' && (e.data.cause === 'EXPECTED_MEMBERS' || e.data.cause === 'MAX_MEMBERS');
  if (g.due && !sealsTheJoin) problems.push(`group ${g.id}: its condition was met (${g.due.outcome} ${g.due.outcomeReason}) but ${e.type} at ${iso(e.occurredAt)} came before any decision`);
  g.due = ruleSays(g.rule, g.closed, membersOf(g, replay));
}

function membersOf(g: ReplayedGroup, replay: GroupReplay): MemberStanding[] {
  return [...g.members].map(([taskId, m]) => ({ verdict: m.verdict, taskState: replay.taskStates.get(taskId) ?? 'unknown' }));
}

// ---------------------------------------------------------------------------------------------
// The store, after every step and at the end

/** A group's decision once the store showed it: it must never change afterwards. */
interface SeenDecision {
  outcome: string;
  outcomeReason: string;
  decidedAt: number | null;
}

/**
 * After every step, from the store: each group's memberCount within its cap, and a decided
 * group's outcome, reason and decision time as first seen (the stored outcome is set once).
 */
export class GroupWatch {
  private readonly seen = new Map<string, SeenDecision>();

  async checkStep(store: Store, spaceId: string): Promise<string[]> {
    const problems: string[] = [];
    const groups = await store.read((tx) => tx.taskGroups.list(spaceId, null, null, 10_000));
    for (const g of groups) {
      if (g.memberCount > capOf(g)) problems.push(`group ${g.id}: ${g.memberCount} members, above its cap ${capOf(g)}`);
      const before = this.seen.get(g.id);
      if (before && (g.state !== 'DECIDED' || g.outcome !== before.outcome || g.outcomeReason !== before.outcomeReason || g.decidedAt !== before.decidedAt)) {
        problems.push(`group ${g.id}: the store showed ${before.outcome} ${before.outcomeReason} decided at ${before.decidedAt === null ? 'null' : iso(before.decidedAt)}, now ${g.state} ${g.outcome} ${g.outcomeReason} decided at ${g.decidedAt === null ? 'null' : iso(g.decidedAt)}`);
      }
      if (!before && g.state === 'DECIDED') this.seen.set(g.id, { outcome: String(g.outcome), outcomeReason: String(g.outcomeReason), decidedAt: g.decidedAt });
    }
    return problems;
  }
}

/** What the coordinators did and how their groups ended: shows a run exercised each path. */
export interface GroupStats {
  created: number;
  /** Verdicts that answered 200, and requests (verdict, seal, join, add) the service refused with 409. */
  verdicts: number;
  refused: number;
  /** Groups by `${outcome} ${outcomeReason}` in the journal, and those still undecided at the end. */
  decided: Record<string, number>;
  undecided: number;
}

/**
 * What coordinators were told: once a reply showed a group DECIDED, every later reply shows the
 * same outcome, reason and decision time; a group the client was told was created exists.
 */
export class GroupLedger {
  readonly created = new Set<string>();
  private readonly decided = new Map<string, string>();
  readonly stats: GroupStats = { created: 0, verdicts: 0, refused: 0, decided: {}, undecided: 0 };

  constructor(private readonly violation: (message: string) => void) {}

  observed(view: { id: string; state: string; outcome: string | null; outcomeReason: string | null; decidedAt: string | null }): void {
    if (view.state !== 'DECIDED') {
      if (this.decided.has(view.id)) this.violation(`group ${view.id}: a reply showed it ${view.state} after one showed it decided ${this.decided.get(view.id)}`);
      return;
    }
    const now = `${view.outcome} ${view.outcomeReason} at ${view.decidedAt}`;
    const before = this.decided.get(view.id);
    if (before !== undefined && before !== now) this.violation(`group ${view.id}: a reply showed it decided ${before}, a later one ${now}`);
    if (before === undefined) this.decided.set(view.id, now);
  }
}

/**
 * The final group checks: the journal replay, then the store against it and the liveness
 * promises, once the run has quiesced: no undecided group whose condition is met, none whose
 * deadline passed before `sweptUntilMs` (the deadline sweep ran after it), no live member task
 * in a DECIDED group, and the store's outcome equal to the journal's one decision.
 */
export async function checkGroupsFinal(store: Store, spaceId: string, journal: readonly JournalEvent[], ledger: GroupLedger, sweptUntilMs: number): Promise<string[]> {
  const problems: string[] = [];
  const replay = replayGroups(journal, problems);
  for (const id of ledger.created) if (!replay.groups.has(id)) problems.push(`group ${id}: a create answered 201 but the journal never created it`);
  for (const g of replay.groups.values()) {
    if (!g.decided) ledger.stats.undecided++;
    else ledger.stats.decided[`${g.decided.outcome} ${g.decided.outcomeReason}`] = (ledger.stats.decided[`${g.decided.outcome} ${g.decided.outcomeReason}`] ?? 0) + 1;
  }
  await store.read(async (tx) => {
    const groups = await tx.taskGroups.list(spaceId, null, null, 10_000);
    for (const g of groups) {
      const replayed = replay.groups.get(g.id);
      if (!replayed) {
        problems.push(`group ${g.id} is in the store but was never created in the journal`);
        continue;
      }
      const rows = await tx.taskGroups.listMembers(spaceId, g.id);
      const members = rows.map((m) => ({ verdict: m.verdict, taskState: m.taskState }));
      checkStoredGroup(g, replayed, rows, problems);
      if (g.state === 'DECIDED') {
        for (const m of rows) if (!isTerminal(m.taskState)) problems.push(`group ${g.id} is DECIDED (${g.outcome} ${g.outcomeReason}) but its member task ${m.taskId} is still ${m.taskState}`);
        continue;
      }
      const says = ruleSays(replayed.rule, g.state === 'SEALED', members);
      if (says) problems.push(`group ${g.id} is still ${g.state} at the end though the rule says ${says.outcome} ${says.outcomeReason} (${standing(replayed.rule, g.state === 'SEALED', members)})`);
      if (g.deadline !== null && g.deadline <= sweptUntilMs) problems.push(`group ${g.id} is still ${g.state} at the end though its deadline ${iso(g.deadline)} passed before the last deadline sweep`);
    }
  });
  return problems;
}

/** The stored row agrees with the journal: its one decision, its members in join order, their verdicts. */
function checkStoredGroup(g: { id: string; state: string; outcome: string | null; outcomeReason: string | null; decidedAt: number | null; memberCount: number }, replayed: ReplayedGroup, rows: readonly { taskId: string; verdict: string }[], problems: string[]): void {
  const journal = replayed.decided ? `DECIDED ${replayed.decided.outcome} ${replayed.decided.outcomeReason} at ${iso(replayed.decided.atMs)}` : replayed.closed ? 'SEALED' : 'OPEN';
  const stored = g.state === 'DECIDED' ? `DECIDED ${g.outcome} ${g.outcomeReason} at ${g.decidedAt === null ? 'null' : iso(g.decidedAt)}` : g.state;
  if (stored !== journal) problems.push(`group ${g.id}: store says ${stored}, the journal's first decision says ${journal}`);
  if (g.memberCount !== replayed.members.size || rows.length !== replayed.members.size) problems.push(`group ${g.id}: store has ${g.memberCount} members (${rows.length} rows), the journal ${replayed.members.size}`);
  const order = [...replayed.members.keys()];
  rows.forEach((m, i) => {
    if (order[i] !== m.taskId) problems.push(`group ${g.id}: member ${i + 1} is ${m.taskId} in the store, ${order[i]} in the journal`);
    const verdict = replayed.members.get(m.taskId)?.verdict;
    if (verdict !== undefined && verdict !== m.verdict) problems.push(`group ${g.id}: member ${m.taskId} is ${m.verdict} in the store, ${verdict} in the journal`);
  });
}
