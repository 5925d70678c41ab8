/**
 * The group coordinator (docs/architecture.md, "Consumer groups"): any Lambda serves any group,
 * because all group state lives in the coordination table and every change is a compare-and-set on
 * the group's meta item. Heartbeats (join, leave, subscription changes), commits fenced by member
 * epoch and ownership, committed offsets, resets, describe and lag.
 */
import { randomUUID } from 'node:crypto';
import { cachedTopic, partitionCountsKnowing } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import { listOffset, readFromLeader } from '../log/read.js';
import * as store from '../storage/coordination/groups.js';
import type { CommittedOffset, GroupMeta, MemberRecord, Subscription, TargetAssignment } from '../storage/coordination/groups.js';
import { readTxn } from '../storage/coordination/transactions.js';
import { ASSIGNORS, tpKey, type AssignorName, type TopicPartition } from './assignors.js';
import { emptyMeta, expired, keysOf, planHeartbeat, subscribedTopics, targetKeys, type HeartbeatRequest, type TopicFilter } from './membership.js';

/** Kafka 3's group.consumer.session.timeout.ms default. */
export const DEFAULT_SESSION_TIMEOUT_MS = 45_000;
export const MIN_SESSION_TIMEOUT_MS = 1_000;
export const MAX_SESSION_TIMEOUT_MS = 1_800_000;
const CAS_ATTEMPTS = 12;

const GROUP_ID = /^[a-zA-Z0-9._-]{1,249}$/;

export function validateGroupId(groupId: string): void {
  if (!GROUP_ID.test(groupId)) throw new KafkaError('INVALID_GROUP_ID', `INVALID_GROUP_ID: group ids are 1-249 characters of [a-zA-Z0-9._-], got '${groupId}'.`);
}

export function checkSessionTimeout(ms: number): void {
  if (!Number.isInteger(ms) || ms < MIN_SESSION_TIMEOUT_MS || ms > MAX_SESSION_TIMEOUT_MS) {
    throw new KafkaError('INVALID_SESSION_TIMEOUT', `INVALID_SESSION_TIMEOUT: session.timeout.ms must be in [${MIN_SESSION_TIMEOUT_MS}, ${MAX_SESSION_TIMEOUT_MS}], got ${ms}.`);
  }
}

export interface HeartbeatResult {
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly groupEpoch: number;
  /** What the member may own and read now. */
  readonly assignment: readonly TopicPartition[];
  /** What it must give up (then say so by leaving it out of `owned` in its next heartbeat). */
  readonly revoking: readonly TopicPartition[];
  readonly heartbeatIntervalMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Interleaving points for tests: `afterRead` runs after a heartbeat read the group and before it
 * decides and writes, so a test can make another member act in between (no sleeps that hope).
 */
export const heartbeatHooks: { afterRead?: (groupId: string, memberId: string | undefined) => Promise<void> } = {};

/**
 * Every topic's partition count, from the metadata cache — refreshed when a subscription names a
 * topic the cache does not know (it may have just been created).
 */
function partitionCounts(subscriptions: readonly (Subscription | null | undefined)[]): Promise<Readonly<Record<string, number>>> {
  return partitionCountsKnowing(subscriptions.flatMap((s) => s?.topics ?? []));
}

/**
 * The heartbeat as planned: a pattern subscription (given now, or the member's stored one) is
 * resolved again with `topicFilter` — over the existing topics the pattern matches — and stored
 * with the result, as Kafka resolves a regex with the ACLs of the member whose heartbeat refreshes
 * it (KAFKA-18813). Other members' heartbeats assign from that stored result, so what a principal
 * may use is decided only by its own heartbeats. Without a filter (authorization off) the pattern
 * is stored bare and matches every existing topic.
 */
async function resolvePattern(req: HeartbeatRequest, stored: readonly MemberRecord[], counts: Readonly<Record<string, number>>, topicFilter: TopicFilter | undefined): Promise<HeartbeatRequest> {
  if (req.memberEpoch === -1) return req;
  const current = req.subscription !== undefined ? req.subscription : stored.find((m) => m.memberId === req.memberId)?.subscription;
  if (current?.pattern === undefined) return req;
  const pattern = current.pattern;
  if (!topicFilter) return { ...req, subscription: { pattern } };
  const allowed = await topicFilter(subscribedTopics({ pattern }, Object.keys(counts)));
  return { ...req, subscription: { pattern, resolvedTopics: [...allowed].sort() } };
}

/**
 * One heartbeat: joins (memberEpoch 0), leaves (-1), changes the subscription, expires members
 * whose session ran out, recomputes the target assignment when needed, and reconciles the member.
 * `topicFilter` (authorization on): which topics its principal may use, for a pattern subscription.
 * Errors: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT.
 */
export async function heartbeat(groupId: string, req: HeartbeatRequest, assignor: AssignorName = 'sticky', topicFilter?: TopicFilter): Promise<HeartbeatResult> {
  validateGroupId(groupId);
  if (req.sessionTimeoutMs !== undefined) checkSessionTimeout(req.sessionTimeoutMs);
  if (!ASSIGNORS.includes(assignor)) throw new KafkaError('INVALID_REQUEST', `Unknown assignor ${assignor}; use ${ASSIGNORS.join(', ')}.`);
  for (let attempt = 1; ; attempt++) {
    const state = await store.readGroup(groupId);
    await heartbeatHooks.afterRead?.(groupId, req.memberId);
    const now = Date.now();
    const meta = state.meta ?? emptyMeta(groupId, assignor, now);
    const counts = await partitionCounts([...state.members.map((m) => m.subscription), req.subscription]);
    const plan = planHeartbeat(meta, state.target, state.members, await resolvePattern(req, state.members, counts, topicFilter), {
      now, newMemberId: () => randomUUID(), partitionsPerTopic: counts,
      assignor: (meta.assignor as AssignorName) ?? assignor, defaultSessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
    });
    try {
      if (plan.metaChanged || !state.meta) {
        const { target: _ref, ...nextMeta } = plan.meta;
        const asRead = state.members.find((m) => m.memberId === plan.member?.memberId);
        await store.writeGroup({
          meta: nextMeta,
          expectVer: state.meta?.ver ?? null,
          ...(plan.targetChanged ? { target: plan.target } : {}),
          ...(state.meta?.target ? { keepTarget: state.meta.target } : {}),
          putMembers: plan.member ? [{ member: plan.member, readHeartbeatAt: asRead ? asRead.lastHeartbeatAt : null }] : [],
          deleteMembers: plan.removed.map((m) => ({ memberId: m.memberId, readHeartbeatAt: m.lastHeartbeatAt })),
        });
        const before = state.members.map((m) => m.memberId);
        for (const m of plan.removed) logger.info({ event: req.memberId === m.memberId ? 'member-left' : 'member-expired', group: groupId, member: m.memberId, groupEpoch: plan.meta.groupEpoch }, 'member removed');
        if (plan.member && !before.includes(plan.member.memberId)) logger.info({ event: 'member-joined', group: groupId, member: plan.member.memberId, groupEpoch: plan.meta.groupEpoch }, 'member joined');
      } else if (plan.member) {
        await store.updateMember(groupId, plan.member.memberId, { lastHeartbeatAt: plan.member.lastHeartbeatAt, memberEpoch: plan.member.memberEpoch });
      }
    } catch (err) {
      if (!(err instanceof store.GroupChanged || err instanceof store.UnknownMember) || attempt >= CAS_ATTEMPTS) throw err;
      await sleep(Math.random() * 5 * attempt);
      continue;
    }
    const member = plan.member;
    const timeout = member?.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    return {
      memberId: member?.memberId ?? req.memberId ?? '',
      memberEpoch: member ? member.memberEpoch : -1,
      groupEpoch: plan.meta.groupEpoch,
      assignment: plan.assignment,
      revoking: plan.revoking,
      heartbeatIntervalMs: Math.max(250, Math.min(5000, Math.floor(timeout / 3))),
    };
  }
}

/**
 * Whether a member still reads a partition: `live` when it is in the group with its session
 * running (it heartbeated within its session timeout) and owns the partition, `not-owned` when it
 * is live but the partition is no longer its, `expired` when it left or its session ran out (the
 * next heartbeat of any member removes it). One read of its item.
 */
export async function memberReads(groupId: string, memberId: string, tp: TopicPartition, now = Date.now()): Promise<'live' | 'not-owned' | 'expired'> {
  const m = await store.getMember(groupId, memberId);
  if (m === undefined || m.lastHeartbeatAt + m.sessionTimeoutMs <= now) return 'expired';
  return keysOf(m.owned).includes(tpKey(tp)) ? 'live' : 'not-owned';
}

export interface OffsetToCommit {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly metadata?: string;
}

export interface CommitResult {
  /** Offsets not written because they were below what is committed (only a reset moves backwards). */
  readonly kept: readonly OffsetToCommit[];
}

/** Kafka's offset.metadata.max.bytes. */
export const MAX_METADATA_BYTES = 4096;

/**
 * Commits offsets for a member (fenced: it must be at `memberEpoch` and own every partition), or
 * without a member for manually assigned consumers. An offset below the committed one is kept as
 * it is and reported; the others are written.
 * Errors: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH (an epoch behind the member's, on partitions it
 * owns: retriable with the new epoch), FENCED_MEMBER_EPOCH (an epoch ahead of the member's, or a
 * partition it no longer owns), OFFSET_METADATA_TOO_LARGE.
 */
export async function commit(groupId: string, offsets: readonly OffsetToCommit[], fence: { memberId: string; memberEpoch: number } | null, list = fence === null): Promise<CommitResult> {
  validateGroupId(groupId);
  for (const o of offsets) {
    if (Buffer.byteLength(o.metadata ?? '') > MAX_METADATA_BYTES) throw new KafkaError('OFFSET_METADATA_TOO_LARGE', `OFFSET_METADATA_TOO_LARGE: metadata of ${o.topic}-${o.partition} is over ${MAX_METADATA_BYTES} bytes.`);
    if (!Number.isSafeInteger(o.offset) || o.offset < 0) throw new KafkaError('INVALID_REQUEST', `Offset ${o.offset} for ${o.topic}-${o.partition} is not a valid offset.`);
  }
  // A partition named twice: the last offset given wins, as in Kafka's OffsetCommit (a transaction
  // may hold one write per item).
  let pending = [...new Map(offsets.map((o) => [tpKey(o), o])).values()];
  const ids = await topicIds(pending.map((o) => o.topic));
  const kept: OffsetToCommit[] = [];
  while (pending.length > 0) {
    const chunk = pending.slice(0, 90);
    try {
      await store.commitOffsets(groupId, chunk.map((o) => {
        const topicId = ids.get(o.topic);
        return { topic: o.topic, partition: o.partition, offset: o.offset, metadata: o.metadata ?? '', committedAt: Date.now(), ...(topicId ? { topicId } : {}) };
      }), fence, false, list);
      pending = pending.slice(chunk.length);
    } catch (err) {
      if (!(err instanceof store.CommitRejected)) throw err;
      if (err.reason === 'backwards' && err.index !== undefined) {
        kept.push(chunk[err.index] as OffsetToCommit);
        pending = pending.filter((o) => o !== chunk[err.index as number]);
        continue;
      }
      const state = await store.readGroup(groupId);
      const member = state.members.find((m) => m.memberId === fence?.memberId);
      if (!member) throw new KafkaError('UNKNOWN_MEMBER_ID', `UNKNOWN_MEMBER_ID: member ${fence?.memberId} is not in group ${groupId}.`);
      const owns = new Set(keysOf(member.owned));
      const notOwned = chunk.filter((o) => !owns.has(tpKey(o))).map((o) => `${o.topic}-${o.partition}`);
      // Kafka's rule: an epoch behind the member's is stale (a heartbeat moved it on while this
      // commit was in flight: the client retries with the new one); one ahead is fenced.
      if (notOwned.length === 0 && fence !== null && fence.memberEpoch < member.memberEpoch) {
        throw new KafkaError('STALE_MEMBER_EPOCH', `STALE_MEMBER_EPOCH: member ${member.memberId} is at epoch ${member.memberEpoch} (commit said ${fence.memberEpoch}): commit again with the new epoch.`);
      }
      throw new KafkaError('FENCED_MEMBER_EPOCH', `FENCED_MEMBER_EPOCH: member ${member.memberId} is at epoch ${member.memberEpoch} (commit said ${fence?.memberEpoch})${notOwned.length ? ` and does not own ${notOwned.join(', ')}` : ''}.`);
    }
  }
  return { kept };
}

/**
 * KIP-447's fence on offsets sent in a transaction: the consumer that read them is still the
 * group's member at that generation (its member epoch).
 * Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION.
 */
export async function checkMember(groupId: string, memberId: string, generationId: number): Promise<void> {
  validateGroupId(groupId);
  const member = (await store.readGroup(groupId)).members.find((m) => m.memberId === memberId);
  if (!member) throw new KafkaError('UNKNOWN_MEMBER_ID', `UNKNOWN_MEMBER_ID: member ${memberId} is not in group ${groupId}.`);
  if (member.memberEpoch !== generationId) {
    throw new KafkaError('ILLEGAL_GENERATION', `ILLEGAL_GENERATION: member ${memberId} of group ${groupId} is at generation ${member.memberEpoch}, not ${generationId}.`);
  }
}

/** The ids of the topics named, as the metadata has them now (absent: no such topic). */
async function topicIds(topics: Iterable<string>): Promise<Map<string, string | undefined>> {
  return new Map(await Promise.all([...new Set(topics)].map(async (t) => [t, (await cachedTopic(t))?.topic.topicId] as const)));
}

/**
 * A group's committed offsets, without those committed for an earlier topic of the same name: as
 * Kafka drops a deleted topic's offsets, a topic created again starts with none.
 */
async function readOffsets(groupId: string): Promise<CommittedOffset[]> {
  return current(await store.readOffsets(groupId));
}

async function current(all: readonly CommittedOffset[]): Promise<CommittedOffset[]> {
  const ids = await topicIds(all.filter((o) => o.topicId !== undefined).map((o) => o.topic));
  return all.filter((o) => o.topicId === undefined || ids.get(o.topic) === undefined || ids.get(o.topic) === o.topicId);
}

/**
 * Committed offsets of a group, optionally only some partitions. With `requireStable` (Kafka's
 * OffsetFetch `require_stable`, what a read_committed consumer asks), a partition whose offsets a
 * transaction holds — open or being completed — answers UNSTABLE_OFFSET_COMMIT (retriable):
 * the consumer would otherwise start from an offset the transaction is about to move.
 */
export async function committed(groupId: string, only?: readonly TopicPartition[], o: { readonly requireStable?: boolean } = {}): Promise<CommittedOffset[]> {
  validateGroupId(groupId);
  const wanted = only && new Set(only.map(tpKey));
  if (!o.requireStable) {
    const all = await readOffsets(groupId);
    return wanted ? all.filter((x) => wanted.has(tpKey(x))) : all;
  }
  // A transaction found complete may have committed its offsets after they were read: read them
  // again after it (a finish commits the offsets before it clears its pending item and completes).
  let read = await store.readOffsetsAndPending(groupId);
  for (let round = 1; ; round++) {
    const holding = read.pending.filter((p) => !wanted || p.partitions.some((k) => wanted.has(k)));
    await requireStable(groupId, holding);
    if (holding.length === 0 || round === STABLE_READS) break;
    read = await store.readOffsetsAndPending(groupId);
  }
  const all = await current(read.offsets);
  return wanted ? all.filter((x) => wanted.has(tpKey(x))) : all;
}

/** Reads of a group's offsets a stable read makes at most while it finds transactions' pending items. */
const STABLE_READS = 3;

/** Throws UNSTABLE_OFFSET_COMMIT while one of these transactions is open or being completed (an item left by a finished one is ignored). */
async function requireStable(groupId: string, pending: readonly store.PendingOffsetsItem[]): Promise<void> {
  for (const p of pending) {
    const t = await readTxn(p.transactionalId);
    if (!t || t.producerId !== p.producerId) continue;
    const open = (t.state === 'Ongoing' && t.producerEpoch === p.epoch)
      || ((t.state === 'PrepareCommit' || t.state === 'PrepareAbort') && t.lastEpoch === p.epoch);
    if (open) throw new KafkaError('UNSTABLE_OFFSET_COMMIT', `UNSTABLE_OFFSET_COMMIT: transactional id ${p.transactionalId} holds offsets of group ${groupId} not committed yet; try again.`);
  }
}

export type GroupStateName = 'Empty' | 'Stable' | 'Reconciling' | 'Dead';

export interface GroupDescription {
  readonly groupId: string;
  readonly state: GroupStateName;
  readonly groupEpoch: number;
  readonly assignor: string;
  readonly members: readonly (MemberRecord & { readonly assignment: readonly TopicPartition[]; readonly expired: boolean })[];
}

export function groupState(meta: GroupMeta | undefined, target: TargetAssignment, members: readonly MemberRecord[], now = Date.now()): GroupStateName {
  if (!meta) return 'Dead';
  const live = members.filter((m) => m.subscription !== null && !expired([m], now).length);
  if (live.length === 0) return 'Empty';
  const owned = new Map(members.map((m) => [m.memberId, new Set(keysOf(m.owned))]));
  const settled = live.every((m) => m.memberEpoch === meta.groupEpoch)
    && Object.entries(targetKeys(target)).every(([id, tps]) => tps.every((k) => owned.get(id)?.has(k)));
  return settled ? 'Stable' : 'Reconciling';
}

export async function describeGroup(groupId: string): Promise<GroupDescription> {
  validateGroupId(groupId);
  const { meta, target, members } = await store.readGroup(groupId);
  // A group that only has committed offsets (a reset, a manually assigned consumer's commits)
  // exists, with no members: Kafka describes it as Empty.
  const offsetsOnly = !meta && members.length === 0 && (await readOffsets(groupId)).length > 0;
  if (!meta && members.length === 0 && !offsetsOnly) throw new KafkaError('GROUP_ID_NOT_FOUND', `GROUP_ID_NOT_FOUND: group ${groupId} does not exist.`);
  const now = Date.now();
  return {
    groupId,
    state: offsetsOnly ? 'Empty' : groupState(meta, target, members, now),
    groupEpoch: meta?.groupEpoch ?? 0,
    assignor: meta?.assignor ?? 'sticky',
    members: members.map((m) => ({
      ...m,
      expired: expired([m], now).length > 0,
      assignment: Object.entries(m.owned ?? {}).flatMap(([topic, parts]) => parts.map((partition) => ({ topic, partition }))),
    })),
  };
}

export const listGroups = store.listGroupIds;

/** Deletes a group with no live members (Kafka's DeleteGroups). Errors: NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND. */
export async function deleteGroup(groupId: string): Promise<void> {
  const d = await describeGroup(groupId);
  if (d.members.some((m) => m.subscription !== null && !m.expired)) throw new KafkaError('NON_EMPTY_GROUP', `NON_EMPTY_GROUP: group ${groupId} has live members.`);
  await store.deleteGroupItems(groupId);
  logger.info({ event: 'group-deleted', group: groupId }, 'group deleted');
}

export type ResetSpec = 'earliest' | 'latest' | { readonly offset: number } | { readonly timestamp: number } | { readonly shiftBy: number };

/**
 * Kafka's `kafka-consumer-groups --reset-offsets`: the only way committed offsets move backwards.
 * The group must have no live members. Errors: NON_EMPTY_GROUP.
 */
export async function resetOffsets(groupId: string, partitions: readonly TopicPartition[], spec: ResetSpec): Promise<CommittedOffset[]> {
  validateGroupId(groupId);
  const { meta, target, members } = await store.readGroup(groupId);
  const state = groupState(meta, target, members);
  if (state !== 'Empty' && state !== 'Dead') {
    throw new KafkaError('NON_EMPTY_GROUP', `NON_EMPTY_GROUP: stop the consumers of group ${groupId} before resetting its offsets.`);
  }
  const current = new Map((await readOffsets(groupId)).map((o) => [tpKey(o), o.offset]));
  const out: CommittedOffset[] = [];
  // A partition named twice is reset once (a transaction may hold one write per item).
  for (const tp of new Map(partitions.map((x) => [tpKey(x), x])).values()) {
    const [start, end] = await readFromLeader(tp.topic, tp.partition, (t) => Promise.all([listOffset(t, 'earliest'), listOffset(t, 'latest')]));
    let offset: number;
    if (spec === 'earliest') offset = start.offset ?? 0;
    else if (spec === 'latest') offset = end.offset ?? 0;
    else if ('offset' in spec) offset = spec.offset;
    else if ('shiftBy' in spec) offset = (current.get(tpKey(tp)) ?? start.offset ?? 0) + spec.shiftBy;
    else offset = (await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, { timestamp: spec.timestamp }))).offset ?? end.offset ?? 0;
    offset = Math.max(start.offset ?? 0, Math.min(end.offset ?? 0, offset));
    out.push({ topic: tp.topic, partition: tp.partition, offset, metadata: '', committedAt: Date.now() });
  }
  for (let i = 0; i < out.length; i += 90) await store.commitOffsets(groupId, out.slice(i, i + 90), null, true);
  logger.info({ event: 'offsets-reset', group: groupId, partitions: out.length }, 'committed offsets reset');
  return out;
}

export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly currentOffset: number | null;
  readonly logEndOffset: number;
  /** Where a read_committed consumer's reading ends (below the log end while a transaction is open). */
  readonly lastStableOffset: number;
  readonly lag: number;
  readonly memberId: string | null;
}

/** Lag per partition the group commits or owns: high watermark − committed offset (and the last stable offset beside it). */
export async function groupLag(groupId: string): Promise<PartitionLag[]> {
  const [d, offsets] = await Promise.all([describeGroup(groupId), readOffsets(groupId)]);
  const owners = new Map(d.members.flatMap((m) => m.assignment.map((tp) => [tpKey(tp), m.memberId] as const)));
  const keys = [...new Set([...offsets.map(tpKey), ...owners.keys()])].sort();
  const committedAt = new Map(offsets.map((o) => [tpKey(o), o.offset]));
  const counts = await partitionCountsKnowing(keys.map((k) => k.slice(0, k.lastIndexOf('#'))));
  return Promise.all(keys.filter((k) => counts[k.slice(0, k.lastIndexOf('#'))] !== undefined).map(async (k) => {
    const topic = k.slice(0, k.lastIndexOf('#'));
    const partition = Number(k.slice(k.lastIndexOf('#') + 1));
    const latest = await readFromLeader(topic, partition, (t) => listOffset(t, 'latest'));
    const end = latest.offset ?? 0;
    const current = committedAt.get(k) ?? null;
    return {
      topic, partition, currentOffset: current, logEndOffset: end, lastStableOffset: latest.lastStableOffset ?? end,
      lag: Math.max(0, end - (current ?? 0)), memberId: owners.get(k) ?? null,
    };
  }));
}
