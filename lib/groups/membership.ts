/**
 * Group membership as a pure state transition (KIP-848's consumer protocol, decided server-side):
 * a heartbeat — which also joins, leaves, or changes a subscription — yields the group's next state
 * and the member's assignment. Invariants: a partition has at most one owner; a member is given a
 * partition only once its previous owner has let it go (acknowledged the revocation by leaving it
 * out of `owned`, or left, or expired); the group epoch moves with membership and subscriptions.
 *
 * Per-member data lives in the member records, never in the group's meta: what a member owns is
 * its record's `owned`, and the target assignment is stored apart (see lib/storage/coordination/groups.ts), so
 * the meta item stays small for any group. A heartbeat changes only its own member's ownership;
 * other members lose partitions only by being removed.
 */
import { createHash } from 'node:crypto';
import { KafkaError } from '../protocol/errors.js';
import type { GroupMeta, MemberRecord, PartitionsByTopic, Subscription, TargetAssignment } from '../storage/coordination/groups.js';
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
  /** The target assignment of `meta.groupEpoch`. */
  readonly target: TargetAssignment;
  /** Whether the target was recomputed (then it is stored anew). */
  readonly targetChanged: boolean;
  /**
   * Whether the group changes — epoch, target, membership, or what this member owns (then the
   * meta item is written by compare-and-set, with the member and the removals, in one transaction).
   */
  readonly metaChanged: boolean;
  /** The member as it should be stored (undefined after a leave). */
  readonly member?: MemberRecord;
  /** Members removed (left or expired), as they were read: their deletion is conditioned on that liveness. */
  readonly removed: readonly MemberRecord[];
  readonly assignment: readonly TopicPartition[];
  /** What the member must still give up (it owns them, but they belong to others now). */
  readonly revoking: readonly TopicPartition[];
}

const parse = (k: string): TopicPartition => {
  const i = k.lastIndexOf('#');
  return { topic: k.slice(0, i), partition: Number(k.slice(i + 1)) };
};

/** The longest subscription pattern accepted: it is stored on the member's item and compiled at every assignment. */
export const MAX_PATTERN_LENGTH = 4096;

/**
 * The regular expression a subscription pattern selects topics with: the whole name must match,
 * as in Kafka. The one place a pattern is compiled, so what a request is checked with is what
 * assignment uses. Throws a SyntaxError for an invalid pattern or one over MAX_PATTERN_LENGTH.
 */
export function subscriptionRegex(pattern: string): RegExp {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new SyntaxError(`the pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  return new RegExp(`^(?:${pattern})$`);
}

/**
 * Which of `topics` the principal of a heartbeat may use (Kafka resolves a pattern only over the
 * topics the member is authorized for): given by the HTTP layer, which knows the caller.
 */
export type TopicFilter = (topics: readonly string[]) => Promise<readonly string[]>;

/** The topics a subscription covers among those that exist (a pattern's: its resolved topics only, once resolved). */
export function subscribedTopics(s: Subscription | null | undefined, existing: readonly string[]): string[] {
  if (!s) return [];
  if (s.pattern !== undefined) {
    const re = subscriptionRegex(s.pattern);
    const resolved = s.resolvedTopics ? new Set(s.resolvedTopics) : undefined;
    return existing.filter((t) => re.test(t) && (!resolved || resolved.has(t))).sort();
  }
  return [...(s.topics ?? [])].filter((t) => existing.includes(t)).sort();
}

const sameSubscription = (a: Subscription | null | undefined, b: Subscription | null | undefined): boolean =>
  JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function emptyMeta(groupId: string, assignor: AssignorName, now: number): GroupMeta {
  return { groupId, groupEpoch: 0, assignor, subscriptionHash: '', createdAt: new Date(now).toISOString(), ver: 0 };
}

/** `topic#partition` keys → the compact stored form, topics and partitions sorted. */
export function byTopic(keys: Iterable<string>): PartitionsByTopic {
  const out: Record<string, number[]> = {};
  for (const k of keys) {
    const tp = parse(k);
    (out[tp.topic] ??= []).push(tp.partition);
  }
  return Object.fromEntries(Object.keys(out).sort().map((t) => [t, (out[t] as number[]).sort((a, b) => a - b)]));
}

/** The compact stored form → `topic#partition` keys. */
export const keysOf = (p: PartitionsByTopic | undefined): string[] =>
  Object.entries(p ?? {}).flatMap(([topic, parts]) => parts.map((partition) => `${topic}#${partition}`));

/** Who owns each partition, from the member records (`topic#partition` → member id). */
export function ownersOf(members: readonly MemberRecord[]): Map<string, string> {
  const owners = new Map<string, string>();
  for (const m of members) for (const k of keysOf(m.owned)) owners.set(k, m.memberId);
  return owners;
}

/** The target as `topic#partition` keys per member. */
export const targetKeys = (t: TargetAssignment): Record<string, string[]> =>
  Object.fromEntries(Object.entries(t).map(([m, p]) => [m, keysOf(p)]));

/**
 * Members whose session ran out by `now`, other than `except`. Expiry is judged on the member's
 * own record (`lastHeartbeatAt + sessionTimeoutMs < now`), and the removal that follows is
 * conditioned on `lastHeartbeatAt` being still what was read: a member that heartbeated since
 * survives.
 */
export const expired = (members: readonly MemberRecord[], now: number, except?: string): MemberRecord[] =>
  members.filter((m) => m.memberId !== except && m.subscription !== null && m.lastHeartbeatAt + m.sessionTimeoutMs < now);

/** At most this many expired members are removed per heartbeat (one transaction); later heartbeats remove the rest. */
export const MAX_EXPIRED_PER_HEARTBEAT = 64;

export function planHeartbeat(stored: GroupMeta, storedTarget: TargetAssignment, members: readonly MemberRecord[], req: HeartbeatRequest, ctx: Context): HeartbeatPlan {
  const byId = new Map(members.map((m) => [m.memberId, m]));
  let member = req.memberId !== undefined ? byId.get(req.memberId) : undefined;
  const asRead = member;
  if (req.memberId !== undefined && !member && req.memberEpoch !== 0) {
    throw new KafkaError('UNKNOWN_MEMBER_ID', `UNKNOWN_MEMBER_ID: member ${req.memberId} is not in group ${stored.groupId}.`);
  }
  if (member && req.memberEpoch > 0 && req.memberEpoch !== member.memberEpoch) {
    throw new KafkaError('FENCED_MEMBER_EPOCH', `FENCED_MEMBER_EPOCH: member ${member.memberId} is at epoch ${member.memberEpoch}, not ${req.memberEpoch}.`);
  }
  const removed: MemberRecord[] = [];
  let membershipChanged = false;

  // Leave, join, subscription change.
  const id = member?.memberId ?? req.memberId ?? ctx.newMemberId();
  let ownedNow = new Set(keysOf(member?.owned));
  if (req.memberEpoch === -1) {
    if (member) {
      byId.delete(id);
      removed.push(member);
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
    if (subscription === null) ownedNow = new Set();
  }

  // Sessions that ran out (their partitions go with their records).
  for (const m of expired([...byId.values()], ctx.now, id).slice(0, MAX_EXPIRED_PER_HEARTBEAT)) {
    byId.delete(m.memberId);
    removed.push(m);
    membershipChanged = true;
  }

  // The target assignment, recomputed when membership or the subscribed partitions changed.
  const exists = (k: string) => {
    const tp = parse(k);
    return tp.partition < (ctx.partitionsPerTopic[tp.topic] ?? 0);
  };
  // Owners of partitions that no longer exist let them go.
  const owners = new Map([...ownersOf([...byId.values()].filter((m) => m.memberId !== id))].filter(([k]) => exists(k)));
  ownedNow = new Set([...ownedNow].filter(exists));
  for (const k of ownedNow) owners.set(k, id);
  const existing = Object.keys(ctx.partitionsPerTopic).sort();
  const active = [...byId.values()].filter((m) => m.subscription !== null).sort((a, b) => a.memberId.localeCompare(b.memberId));
  const topics = new Map(active.map((m) => [m.memberId, subscribedTopics(m.subscription, existing)]));
  const used = [...new Set([...topics.values()].flat())].sort();
  const hash = createHash('sha256')
    .update(JSON.stringify([active.map((m) => [m.memberId, topics.get(m.memberId)]), used.map((t) => [t, ctx.partitionsPerTopic[t]])]))
    .digest('base64');
  let groupEpoch = stored.groupEpoch;
  let target = storedTarget;
  let targetChanged = false;
  if (membershipChanged || hash !== stored.subscriptionHash) {
    groupEpoch++;
    const result = assign(ctx.assignor, active.map((m) => ({
      memberId: m.memberId,
      topics: topics.get(m.memberId) ?? [],
      owned: [...owners].filter(([, o]) => o === m.memberId).map(([k]) => parse(k)),
    })), Object.fromEntries(used.map((t) => [t, ctx.partitionsPerTopic[t] ?? 0])));
    target = Object.fromEntries([...result].filter(([, tps]) => tps.length > 0).map(([m, tps]) => [m, byTopic(tps.map(tpKey))]));
    targetChanged = true;
  }

  // Reconcile this member against the target: only its own ownership changes here.
  let assignment: string[] = [];
  let revoking: string[] = [];
  if (member && member.subscription !== null) {
    const mine = new Set(keysOf(target[id]));
    const acknowledged = req.owned === undefined ? undefined : new Set(req.owned);
    for (const k of [...ownedNow]) {
      // Let go: no longer owned by the member (acknowledged), or told to and it gives up at once.
      if ((acknowledged && !acknowledged.has(k)) || (!acknowledged && !mine.has(k))) {
        ownedNow.delete(k);
        owners.delete(k);
      }
    }
    revoking = [...ownedNow].filter((k) => !mine.has(k)).sort();
    for (const k of mine) {
      if (owners.get(k) === undefined) {
        owners.set(k, id);
        ownedNow.add(k);
      }
    }
    assignment = [...mine].filter((k) => owners.get(k) === id).sort();
    // The member is at the group epoch once it holds its whole target and gives nothing back.
    const reconciled = revoking.length === 0 && assignment.length === mine.size;
    member = { ...member, owned: byTopic(ownedNow), memberEpoch: reconciled || member.memberEpoch === 0 ? groupEpoch : member.memberEpoch };
  } else if (member) {
    member = { ...member, owned: {} };
  }

  // Field by field: nothing else a stored meta carries (an older layout's per-member maps) is written back.
  const meta: GroupMeta = {
    groupId: stored.groupId, groupEpoch, assignor: stored.assignor, subscriptionHash: hash, createdAt: stored.createdAt, ver: stored.ver,
    ...(stored.target ? { target: stored.target } : {}),
  };
  const ownedChanged = member !== undefined && JSON.stringify(byTopic(keysOf(asRead?.owned))) !== JSON.stringify(member.owned);
  const metaChanged = groupEpoch !== stored.groupEpoch || hash !== stored.subscriptionHash || removed.length > 0 || ownedChanged || (!asRead && member !== undefined);
  return {
    meta,
    target,
    targetChanged,
    metaChanged,
    ...(member ? { member } : {}),
    removed,
    assignment: assignment.map(parse),
    revoking: revoking.map(parse),
  };
}
