/**
 * Group membership as a pure state transition (KIP-848's consumer protocol, decided server-side):
 * a heartbeat — which also joins, leaves, or changes a subscription — yields the group's next state
 * and the member's assignment. Invariants: a partition has at most one owner; a member is given a
 * partition only once its previous owner has let it go (acknowledged the revocation by leaving it
 * out of `owned`, or left, or expired); the group epoch moves with membership and subscriptions.
 */
import { KafkaError } from '../errors.js';
import type { GroupMeta, MemberRecord, Subscription } from '../storage/groups.js';
import { assign, tpKey, type AssignorName, type TopicPartition } from './assignors.js';

export interface HeartbeatRequest {
  /** Absent: a new member joins with a generated id. */
  readonly memberId?: string;
  /** 0 joins (or rejoins), -1 leaves, otherwise the epoch the member last got. */
  readonly memberEpoch: number;
  /** Given when joining or changing it; `null` unsubscribes. */
  readonly subscription?: Subscription | null;
  /**
   * The partitions the member owns now, acknowledging revocations by leaving them out. Undefined
   * means the member gives up at once whatever it is told to (REST consumers, which the server runs).
   */
  readonly owned?: readonly string[];
  readonly sessionTimeoutMs?: number;
}

export interface Context {
  readonly now: number;
  readonly newMemberId: () => string;
  /** Topic → partition count for every existing topic (for subscriptions by name or pattern). */
  readonly partitionsPerTopic: Readonly<Record<string, number>>;
  readonly assignor: AssignorName;
  readonly defaultSessionTimeoutMs: number;
}

export interface HeartbeatPlan {
  readonly meta: GroupMeta;
  /** Whether `meta` differs from the stored one (then it is written by compare-and-set). */
  readonly metaChanged: boolean;
  /** The member as it should be stored (undefined after a leave). */
  readonly member?: MemberRecord;
  /** Members removed: left or expired. */
  readonly removed: readonly string[];
  readonly assignment: readonly TopicPartition[];
  /** What the member must still give up (it owns them, but they belong to others now). */
  readonly revoking: readonly TopicPartition[];
}

const parse = (k: string): TopicPartition => {
  const i = k.lastIndexOf('#');
  return { topic: k.slice(0, i), partition: Number(k.slice(i + 1)) };
};

/** The topics a subscription covers among those that exist. */
export function subscribedTopics(s: Subscription | null | undefined, existing: readonly string[]): string[] {
  if (!s) return [];
  if (s.pattern !== undefined) {
    const re = new RegExp(`^(?:${s.pattern})$`);
    return existing.filter((t) => re.test(t)).sort();
  }
  return [...(s.topics ?? [])].filter((t) => existing.includes(t)).sort();
}

const sameSubscription = (a: Subscription | null | undefined, b: Subscription | null | undefined): boolean =>
  JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function emptyMeta(groupId: string, assignor: AssignorName, now: number): GroupMeta {
  return { groupId, groupEpoch: 0, assignor, target: {}, owners: {}, subscriptionHash: '', createdAt: new Date(now).toISOString(), ver: 0 };
}

/** Members whose session ran out by `now`, other than `except`. */
export const expired = (members: readonly MemberRecord[], now: number, except?: string): MemberRecord[] =>
  members.filter((m) => m.memberId !== except && m.subscription !== null && m.lastHeartbeatAt + m.sessionTimeoutMs < now);

export function planHeartbeat(stored: GroupMeta, members: readonly MemberRecord[], req: HeartbeatRequest, ctx: Context): HeartbeatPlan {
  const byId = new Map(members.map((m) => [m.memberId, m]));
  let member = req.memberId !== undefined ? byId.get(req.memberId) : undefined;
  if (req.memberId !== undefined && !member && req.memberEpoch !== 0) {
    throw new KafkaError('UNKNOWN_MEMBER_ID', `UNKNOWN_MEMBER_ID: member ${req.memberId} is not in group ${stored.groupId}.`);
  }
  if (member && req.memberEpoch > 0 && req.memberEpoch !== member.memberEpoch) {
    throw new KafkaError('FENCED_MEMBER_EPOCH', `FENCED_MEMBER_EPOCH: member ${member.memberId} is at epoch ${member.memberEpoch}, not ${req.memberEpoch}.`);
  }
  const owners: Record<string, string> = { ...stored.owners };
  const removed: string[] = [];
  let membershipChanged = false;
  const release = (id: string) => {
    for (const [k, owner] of Object.entries(owners)) if (owner === id) delete owners[k];
  };

  // Leave, join, subscription change.
  const id = member?.memberId ?? req.memberId ?? ctx.newMemberId();
  if (req.memberEpoch === -1) {
    if (member) {
      release(id);
      byId.delete(id);
      removed.push(id);
      membershipChanged = member.subscription !== null;
    }
    member = undefined;
  } else {
    const subscription = req.subscription === undefined ? member?.subscription ?? null : req.subscription;
    if (!member || !sameSubscription(member.subscription, subscription)) membershipChanged = true;
    member = {
      ...(member ?? { memberId: id, memberEpoch: 0, joinedAt: new Date(ctx.now).toISOString() }),
      memberId: id,
      subscription,
      lastHeartbeatAt: ctx.now,
      sessionTimeoutMs: req.sessionTimeoutMs ?? member?.sessionTimeoutMs ?? ctx.defaultSessionTimeoutMs,
    } as MemberRecord;
    byId.set(id, member);
    if (subscription === null) release(id);
  }

  // Sessions that ran out.
  for (const m of expired([...byId.values()], ctx.now, id)) {
    release(m.memberId);
    byId.delete(m.memberId);
    removed.push(m.memberId);
    membershipChanged = true;
  }

  // The target assignment, recomputed when membership or the subscribed partitions changed.
  const existing = Object.keys(ctx.partitionsPerTopic).sort();
  const active = [...byId.values()].filter((m) => m.subscription !== null).sort((a, b) => a.memberId.localeCompare(b.memberId));
  const topics = new Map(active.map((m) => [m.memberId, subscribedTopics(m.subscription, existing)]));
  const used = [...new Set([...topics.values()].flat())].sort();
  const hash = JSON.stringify([active.map((m) => [m.memberId, topics.get(m.memberId)]), used.map((t) => [t, ctx.partitionsPerTopic[t]])]);
  let groupEpoch = stored.groupEpoch;
  let target = stored.target;
  // Owners of partitions that no longer exist let them go.
  for (const k of Object.keys(owners)) {
    const tp = parse(k);
    if (!(tp.partition < (ctx.partitionsPerTopic[tp.topic] ?? 0))) delete owners[k];
  }
  if (membershipChanged || hash !== stored.subscriptionHash) {
    groupEpoch++;
    const result = assign(ctx.assignor, active.map((m) => ({
      memberId: m.memberId,
      topics: topics.get(m.memberId) ?? [],
      owned: Object.entries(owners).filter(([, o]) => o === m.memberId).map(([k]) => parse(k)),
    })), Object.fromEntries(used.map((t) => [t, ctx.partitionsPerTopic[t] ?? 0])));
    target = Object.fromEntries([...result].map(([m, tps]) => [m, tps.map(tpKey)]));
  }

  // Reconcile this member against the target.
  let assignment: string[] = [];
  let revoking: string[] = [];
  if (member && member.subscription !== null) {
    const mine = new Set(target[id] ?? []);
    const acknowledged = req.owned === undefined ? undefined : new Set(req.owned);
    for (const [k, owner] of Object.entries(owners)) {
      if (owner !== id) continue;
      // Let go: no longer owned by the member (acknowledged), or told to and it gives up at once.
      if ((acknowledged && !acknowledged.has(k)) || (!acknowledged && !mine.has(k))) delete owners[k];
    }
    revoking = Object.entries(owners).filter(([k, o]) => o === id && !mine.has(k)).map(([k]) => k);
    for (const k of mine) if (owners[k] === undefined) owners[k] = id;
    assignment = [...mine].filter((k) => owners[k] === id).sort();
    // The member is at the group epoch once it holds its whole target and gives nothing back.
    const reconciled = revoking.length === 0 && assignment.length === mine.size;
    member = { ...member, memberEpoch: reconciled || member.memberEpoch === 0 ? groupEpoch : member.memberEpoch };
  }

  const meta: GroupMeta = { ...stored, groupEpoch, target, owners, subscriptionHash: hash };
  const metaChanged = groupEpoch !== stored.groupEpoch || JSON.stringify(owners) !== JSON.stringify(stored.owners);
  return {
    meta,
    metaChanged,
    ...(member ? { member } : {}),
    removed,
    assignment: assignment.map(parse),
    revoking: revoking.map(parse),
  };
}
