/**
 * REST Proxy v2 consumer instances, run by the server: an instance is a group member whose state
 * (settings, subscription, read positions) lives in its member item, so any Lambda can serve any
 * request of any instance — no sticky routing, no "consumer instance not found" behind a load
 * balancer. A poll is the instance's heartbeat: it takes the assignment, auto-commits what the
 * previous poll returned, reads from the positions, and stores the new positions.
 */
import { KafkaError } from '../protocol/errors.js';
import { isKafkaError } from '../errors.js';
import { config } from '../config.js';
import { deadlineIn } from '../deadline.js';
import { logger } from '../logger.js';
import { fetchRecords, listOffset, readFromLeader, type IsolationLevel } from '../log/read.js';
import type { BatchRecord } from '../protocol/record-batch.js';
import * as store from '../storage/coordination/groups.js';
import type { MemberRecord, RestConsumerFormat, RestConsumerState, Subscription } from '../storage/coordination/groups.js';
import { tpKey, type TopicPartition } from './assignors.js';
import { checkSessionTimeout, commit, committed, DEFAULT_SESSION_TIMEOUT_MS, heartbeat, validateGroupId, type OffsetToCommit } from './coordinator.js';
import { subscriptionRegex, type TopicFilter } from './membership.js';

export { REST_CONSUMER_FORMATS, type RestConsumerFormat } from '../storage/coordination/groups.js';

export interface InstanceConfig {
  readonly name?: string;
  readonly format: RestConsumerFormat;
  readonly autoOffsetReset: 'earliest' | 'latest' | 'none';
  readonly autoCommit: boolean;
  readonly fetchMinBytes: number;
  readonly requestTimeoutMs: number;
  readonly sessionTimeoutMs: number;
}

export interface ConsumedRecord extends BatchRecord {
  readonly topic: string;
  readonly partition: number;
}

/** REST Proxy's "consumer instance not found" (40403). */
export class InstanceNotFound extends Error {
  override readonly name = 'InstanceNotFound';
}
/** REST Proxy's "consumer instance with the specified name already exists" (40902). */
export class InstanceExists extends Error {
  override readonly name = 'InstanceExists';
}
/** REST Proxy's "illegal state" (40903): subscribing and assigning at once, seeking an unassigned partition... */
export class IllegalState extends Error {
  override readonly name = 'IllegalState';
}

async function instance(group: string, id: string): Promise<MemberRecord & { rest: RestConsumerState }> {
  validateGroupId(group);
  const m = (await store.readGroup(group)).members.find((x) => x.memberId === id);
  if (!m || !m.rest) throw new InstanceNotFound(`Consumer instance ${id} not found in group ${group}.`);
  return m as MemberRecord & { rest: RestConsumerState };
}

export async function createInstance(group: string, id: string, c: InstanceConfig): Promise<void> {
  validateGroupId(group);
  checkSessionTimeout(c.sessionTimeoutMs);
  try {
    await store.createMember(group, {
      memberId: id, memberEpoch: 0, subscription: null, lastHeartbeatAt: Date.now(), sessionTimeoutMs: c.sessionTimeoutMs,
      joinedAt: new Date().toISOString(),
      rest: { format: c.format, autoOffsetReset: c.autoOffsetReset, autoCommit: c.autoCommit, fetchMinBytes: c.fetchMinBytes, requestTimeoutMs: c.requestTimeoutMs, positions: {} },
    });
  } catch (err) {
    if (err instanceof store.MemberExists) throw new InstanceExists(`Consumer instance ${id} already exists in group ${group}.`);
    throw err;
  }
}

export async function instanceConfig(group: string, id: string): Promise<RestConsumerState> {
  return (await instance(group, id)).rest;
}

/** Leaves the group (its partitions go to the others) and forgets the instance. */
export async function deleteInstance(group: string, id: string): Promise<void> {
  const m = await instance(group, id);
  if (m.subscription !== null) await heartbeat(group, { memberId: id, memberEpoch: -1 });
  await store.deleteMember(group, id);
}

/** Subscribes the instance; `topicFilter` (authorization on) decides which topics a pattern covers. */
export async function subscribe(group: string, id: string, subscription: Subscription, topicFilter?: TopicFilter): Promise<void> {
  const m = await instance(group, id);
  if (m.manual && m.manual.length > 0) throw new IllegalState('Subscription to topics, partitions and pattern are mutually exclusive.');
  if (subscription.pattern !== undefined) {
    try {
      subscriptionRegex(subscription.pattern);
    } catch (err) {
      throw new KafkaError('INVALID_REQUEST', `topic_pattern is not a valid regular expression (${(err as Error).message.slice(-120)}).`);
    }
  }
  await heartbeat(group, { memberId: id, memberEpoch: m.memberEpoch, subscription, sessionTimeoutMs: m.sessionTimeoutMs }, undefined, topicFilter);
}

export async function subscription(group: string, id: string): Promise<Subscription | null> {
  return (await instance(group, id)).subscription;
}

export async function unsubscribe(group: string, id: string): Promise<void> {
  const m = await instance(group, id);
  if (m.subscription !== null) await heartbeat(group, { memberId: id, memberEpoch: m.memberEpoch, subscription: null });
}

/** Manual assignment (Kafka's assign()): outside the group's balancing, exclusive with a subscription. */
export async function assignManually(group: string, id: string, partitions: readonly TopicPartition[]): Promise<void> {
  const m = await instance(group, id);
  if (m.subscription !== null) throw new IllegalState('Subscription to topics, partitions and pattern are mutually exclusive.');
  await store.updateMember(group, id, { manual: partitions.map(tpKey) });
}

/** What the instance reads now: its manual assignment, or what the group gave it. */
export async function assignments(group: string, id: string): Promise<TopicPartition[]> {
  const m = await instance(group, id);
  if (m.manual && m.manual.length > 0) return m.manual.map(parseKey);
  if (m.subscription === null) return [];
  // What it owns now, as its member record says (partitions it is still revoking included).
  return Object.entries(m.owned ?? {}).flatMap(([topic, parts]) => parts.map((partition) => ({ topic, partition }))).sort(byTp);
}

const parseKey = (k: string): TopicPartition => ({ topic: k.slice(0, k.lastIndexOf('#')), partition: Number(k.slice(k.lastIndexOf('#') + 1)) });
const byTp = (a: TopicPartition, b: TopicPartition) => a.topic.localeCompare(b.topic) || a.partition - b.partition;

/** Where to start a partition with no position: its committed offset, else auto.offset.reset. */
async function startOffset(group: string, tp: TopicPartition, reset: RestConsumerState['autoOffsetReset'], commits: ReadonlyMap<string, number>): Promise<number> {
  const c = commits.get(tpKey(tp));
  if (c !== undefined) return c;
  if (reset === 'none') {
    // Kafka's consumer throws NoOffsetForPartitionException here; its wire error is OFFSET_OUT_OF_RANGE.
    throw new KafkaError('OFFSET_OUT_OF_RANGE', `OFFSET_OUT_OF_RANGE: ${tp.topic}-${tp.partition} has no committed offset in group ${group} and auto.offset.reset is none (NoOffsetForPartition).`);
  }
  return (await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, reset))).offset ?? 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a poll's answer may cost: `cost` of each record it returns adds up to at most `bytes` (the first always goes in). */
export interface ResponseBudget {
  readonly bytes: number;
  readonly cost: (r: ConsumedRecord) => number;
  /** Called with each read's records before `cost` sees them (the schemas their values name are looked up). */
  readonly prepare?: (records: readonly Pick<ConsumedRecord, 'key' | 'value'>[]) => Promise<void>;
}

/** What the caller of a poll may do, as the HTTP layer decides it (authorization on). */
export interface PollAccess {
  /** Re-resolves a pattern subscription at the poll's heartbeat (lib/groups/coordinator.ts). */
  readonly topicFilter?: TopicFilter;
  /** Throws unless every topic may be read; called before each round of reads, before anything is committed. */
  readonly mayRead?: (topics: readonly string[]) => Promise<void>;
}

/**
 * Reads records for an instance (GET .../records): heartbeats, auto-commits the previous poll,
 * reads from every assigned partition (at most `maxBytes` in all, and what fits `response`,
 * waiting up to `timeoutMs` for something), and stores the new positions — each just past the
 * last record returned from its partition. `access.mayRead` is asked for every assigned topic
 * after the heartbeat and before every round of reads (as Kafka's Fetch authorizes each partition
 * of each request): when it throws, the poll ends with its error, having committed, read and
 * stored nothing (the heartbeat stays, as a Kafka consumer keeps its membership while its
 * fetches are refused).
 */
export async function poll(group: string, id: string, o: { timeoutMs: number; maxBytes: number; isolation?: IsolationLevel; response?: ResponseBudget; access?: PollAccess }): Promise<ConsumedRecord[]> {
  const deadline = deadlineIn(o.timeoutMs);
  const m = await instance(group, id);
  let assigned: TopicPartition[] = [];
  let memberEpoch = m.memberEpoch;
  if (m.manual && m.manual.length > 0) {
    assigned = m.manual.map(parseKey);
    await store.updateMember(group, id, { lastHeartbeatAt: Date.now() });
  } else if (m.subscription !== null) {
    // As Kafka's poll(timeout): with nothing assigned yet, keep heartbeating until the timeout.
    for (;;) {
      const hb = await heartbeat(group, { memberId: id, memberEpoch }, undefined, o.access?.topicFilter);
      assigned = [...hb.assignment].sort(byTp);
      memberEpoch = hb.memberEpoch;
      if (assigned.length > 0 || Date.now() >= deadline) break;
      await sleep(Math.min(250, Math.max(0, deadline - Date.now())));
    }
  } else {
    throw new IllegalState('Consumer is not subscribed to any topics or assigned any partitions.');
  }
  const topics = [...new Set(assigned.map((tp) => tp.topic))];
  await o.access?.mayRead?.(topics);
  const mine = new Set(assigned.map(tpKey));
  const positions: Record<string, number> = Object.fromEntries(Object.entries(m.rest.positions).filter(([k]) => mine.has(k)));

  // auto.commit.enable: what the previous poll returned is committed before reading further.
  if (m.rest.autoCommit && Object.keys(positions).length > 0) {
    const fence = m.manual && m.manual.length > 0 ? null : { memberId: id, memberEpoch };
    // (the instance's member item makes the group exist: no group-list write per auto-commit)
    await commit(group, Object.entries(positions).map(([k, offset]) => ({ ...parseKey(k), offset })), fence, false).catch((err: unknown) => {
      logger.warn({ event: 'auto-commit-failed', group, member: id, err: (err as Error).message }, 'auto-commit failed');
    });
  }
  const needStart = assigned.filter((tp) => positions[tpKey(tp)] === undefined);
  if (needStart.length > 0) {
    const commits = new Map((await committed(group)).map((c) => [tpKey(c), c.offset]));
    for (const tp of needStart) positions[tpKey(tp)] = await startOffset(group, tp, m.rest.autoOffsetReset, commits);
  }

  const out: ConsumedRecord[] = [];
  let answerLeft = o.response?.bytes ?? Number.POSITIVE_INFINITY;
  for (let round = 0; ; round++) {
    // A later round reads again: an ACL revoked during the long poll stops it too.
    if (round > 0) await o.access?.mayRead?.(topics);
    let budget = o.maxBytes;
    // Start each poll at a different partition so none starves under a small max_bytes.
    const order = assigned.map((_, i) => assigned[(i + round + Date.now()) % assigned.length] as TopicPartition);
    for (const tp of order) {
      if (budget <= 0 || answerLeft <= 0) break;
      const k = tpKey(tp);
      try {
        const r = await readFromLeader(tp.topic, tp.partition, (t) => fetchRecords(t, { offset: positions[k] as number, maxBytes: budget, maxWaitMs: 0, ...(o.isolation ? { isolation: o.isolation } : {}) }));
        let next = r.nextOffset;
        await o.response?.prepare?.(r.records);
        for (const rec of r.records) {
          const consumed = { ...rec, topic: tp.topic, partition: tp.partition };
          const cost = o.response ? o.response.cost(consumed) : 0;
          if (out.length > 0 && cost > answerLeft) {
            // The answer is full: this partition resumes at the first record left out.
            next = rec.offset;
            answerLeft = 0;
            break;
          }
          out.push(consumed);
          answerLeft -= cost;
          budget -= (rec.key?.length ?? 0) + (rec.value?.length ?? 0) + 64;
        }
        positions[k] = next;
      } catch (err) {
        if (!isKafkaError(err, 'OFFSET_OUT_OF_RANGE') || m.rest.autoOffsetReset === 'none') throw err;
        positions[k] = (await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, m.rest.autoOffsetReset as 'earliest' | 'latest'))).offset ?? 0;
      }
    }
    if (out.length > 0 || Date.now() >= deadline || assigned.length === 0) break;
    // (the same cadence as a fetch's long poll: it bounds how long a committed record waits here)
    await sleep(Math.min(config().longPollMs, Math.max(0, deadline - Date.now())));
  }
  await store.updateMember(group, id, { rest: { ...m.rest, positions } });
  return out;
}

/** Commits offsets for the instance: the given ones, or where every assigned partition's position is. */
export async function commitInstance(group: string, id: string, offsets?: readonly OffsetToCommit[]): Promise<{ kept: readonly OffsetToCommit[] }> {
  const m = await instance(group, id);
  const manual = m.manual !== undefined && m.manual.length > 0;
  const wanted = offsets ?? Object.entries(m.rest.positions).map(([k, offset]) => ({ ...parseKey(k), offset }));
  try {
    return await commit(group, wanted, manual ? null : { memberId: id, memberEpoch: m.memberEpoch });
  } catch (err) {
    if (isKafkaError(err, 'UNKNOWN_MEMBER_ID')) throw new InstanceNotFound(`Consumer instance ${id} not found in group ${group}.`);
    // The classic protocol's name for both: the instance's generation moved on.
    if (isKafkaError(err, 'FENCED_MEMBER_EPOCH') || isKafkaError(err, 'STALE_MEMBER_EPOCH')) {
      throw new KafkaError('ILLEGAL_GENERATION', `ILLEGAL_GENERATION: ${err.message.replace(/^(FENCED|STALE)_MEMBER_EPOCH: /, '')}`);
    }
    throw err;
  }
}

/** Committed offsets of some partitions, for the instance's group. */
export async function committedFor(group: string, id: string, partitions: readonly TopicPartition[]): Promise<{ topic: string; partition: number; offset: number; metadata: string }[]> {
  await instance(group, id);
  return committed(group, partitions);
}

export type SeekTarget =
  | { readonly kind: 'offsets'; readonly offsets: readonly (TopicPartition & { offset: number })[] }
  | { readonly kind: 'timestamps'; readonly timestamps: readonly (TopicPartition & { timestamp: number })[] }
  | { readonly kind: 'beginning' | 'end'; readonly partitions: readonly TopicPartition[] };

/** Moves the instance's positions (Kafka's seek, seekToBeginning, seekToEnd, offsetsForTimes + seek). */
export async function seek(group: string, id: string, target: SeekTarget): Promise<void> {
  const m = await instance(group, id);
  const mine = new Set((await assignments(group, id)).map(tpKey));
  const tps = target.kind === 'offsets' ? target.offsets : target.kind === 'timestamps' ? target.timestamps : target.partitions;
  const unassigned = tps.filter((tp) => !mine.has(tpKey(tp)));
  if (unassigned.length > 0) throw new IllegalState(`No current assignment for partition ${unassigned.map((tp) => `${tp.topic}-${tp.partition}`).join(', ')}.`);
  const positions: Record<string, number> = { ...m.rest.positions };
  for (const tp of tps) {
    const k = tpKey(tp);
    if (target.kind === 'offsets') positions[k] = (tp as TopicPartition & { offset: number }).offset;
    else if (target.kind === 'timestamps') {
      const found = await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, { timestamp: (tp as TopicPartition & { timestamp: number }).timestamp }));
      positions[k] = found.offset ?? (await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, 'latest'))).offset ?? 0;
    } else {
      positions[k] = (await readFromLeader(tp.topic, tp.partition, (t) => listOffset(t, target.kind === 'beginning' ? 'earliest' : 'latest'))).offset ?? 0;
    }
  }
  await store.updateMember(group, id, { rest: { ...m.rest, positions } });
}

export { DEFAULT_SESSION_TIMEOUT_MS };
