/**
 * Consumer group subscriptions over the WebSocket API: the websocket function runs a group member
 * for the connection, as it does a REST Proxy consumer instance (lib/groups/rest-consumer.ts). The
 * member's heartbeats are the client's `heartbeat` messages; each one's answer is reconciled into
 * the connection's partition subscriptions — a partition assigned is subscribed from the group's
 * committed offset (else from `reset`, Kafka's auto.offset.reset), a partition taken away is
 * unsubscribed — and the client commits with `commit` messages, fenced by the member's epoch.
 *
 * The membership is stored on the connection's item (`setConnectionGroup`), with the partitions
 * the group assigned it; each heartbeat compares the assignment with the subscriptions the
 * connection holds (read, not trusted from that list), so one that an invocation cut short never
 * wrote, or that a delivery ended, is subscribed again at the next heartbeat. A member whose client stops heartbeating is expired by the group after its session timeout, as
 * any member; deliveries check the member is live and end its partitions' subscriptions when not.
 * `$disconnect` leaves the group at once.
 */
import { tpKey, type TopicPartition } from '../groups/assignors.js';
import { commit, committed, DEFAULT_SESSION_TIMEOUT_MS, heartbeat, type HeartbeatResult } from '../groups/coordinator.js';
import { isKafkaError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import type { IsolationLevel } from '../log/read.js';
import { logger } from '../logger.js';
import { cachedTopic } from '../cluster/metadata.js';
import { getConnection, setConnectionGroup, subscribedAmong, type ConnectionGroup, type ConnectionRecord } from '../storage/coordination/connections.js';
import { postFrame } from './websocket-delivery.js';
import { subscribe, unsubscribe } from './websocket-subscriptions.js';

export interface GroupSubscribe {
  readonly connectionId: string;
  readonly principal: string;
  readonly host: string;
  readonly groupId: string;
  readonly topic: string;
  readonly reset: 'earliest' | 'latest';
  readonly isolation: IsolationLevel;
  readonly sessionTimeoutMs?: number;
}

const parseKey = (k: string): TopicPartition => ({ topic: k.slice(0, k.lastIndexOf('#')), partition: Number(k.slice(k.lastIndexOf('#') + 1)) });

const notInGroup = (): KafkaError => new KafkaError('INVALID_REQUEST', 'This connection is not subscribed to a consumer group: subscribe with "group_id" first.');

/** The connection's item (its principal and group membership); a closed one is refused. */
export async function connection(connectionId: string): Promise<ConnectionRecord> {
  const c = await getConnection(connectionId);
  if (!c) throw new KafkaError('INVALID_REQUEST', 'This connection is closed.');
  return c;
}

/** Where an assigned partition starts: the group's committed offset, else `reset`; a committed offset outside the log starts at `reset` too, as Kafka's consumer does. */
async function subscribeAssigned(c: ConnectionRecord, g: ConnectionGroup, host: string, tp: TopicPartition, commits: ReadonlyMap<string, number>, deadline: number): Promise<void> {
  const base = { connectionId: c.connectionId, principal: c.principal, host, topic: tp.topic, partition: tp.partition, isolation: g.isolation, member: { groupId: g.groupId, memberId: g.memberId } };
  const at = commits.get(tpKey(tp));
  try {
    await subscribe({ ...base, offset: at ?? g.reset }, deadline);
  } catch (err) {
    if (at === undefined || !isKafkaError(err, 'OFFSET_OUT_OF_RANGE')) throw err;
    await subscribe({ ...base, offset: g.reset }, deadline);
  }
}

/** Runs every step, then throws the first failure (none is left running when the invocation ends). */
async function all(steps: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(steps)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The group partitions the connection holds a subscription of, among `keys` (read, not trusted from its list). */
async function heldAmong(connectionId: string, groupId: string, keys: Iterable<string>): Promise<Set<string>> {
  const candidates = (await Promise.all([...new Set(keys)].map(async (k) => {
    const tp = parseKey(k);
    const view = await cachedTopic(tp.topic);
    return view ? [{ ...tp, topicId: view.topic.topicId }] : [];
  }))).flat();
  return new Set((await subscribedAmong(connectionId, candidates)).filter((s) => s.groupId === groupId).map((s) => tpKey(s)));
}

const unsubscribeAll = (connectionId: string, groupId: string, keys: Iterable<string>): Promise<void> => all([...keys].map(async (k) => {
  const tp = parseKey(k);
  // (a topic deleted meanwhile has no subscription left to end)
  await unsubscribe(connectionId, tp.topic, tp.partition, groupId).catch((err: unknown) => {
    if (!isKafkaError(err, 'UNKNOWN_TOPIC_OR_PARTITION')) throw err;
  });
}));

/**
 * Makes the connection's group partitions what the heartbeat assigned. The membership is stored
 * first, with the new epoch and partitions, on condition that it is still this member's and not
 * at a later epoch (`expect`: `join` when there must be none yet); when that fails — the
 * connection left the group or closed, or a later heartbeat stored its answer — nothing else is
 * done and false is answered. Then what was taken away is unsubscribed and what was added
 * subscribed from the committed offsets. What the connection holds is read from its subscriptions
 * (of the partitions assigned and of those it listed), not trusted from the list, so a
 * subscription that a delivery ended or a cut-short invocation never wrote is subscribed again.
 */
async function reconcile(c: ConnectionRecord, g: ConnectionGroup, host: string, hb: HeartbeatResult, expect: 'join' | 'member', deadline: number): Promise<boolean> {
  const assigned = new Set(hb.assignment.map(tpKey));
  const next: ConnectionGroup = { ...g, memberId: hb.memberId, memberEpoch: hb.memberEpoch, parts: [...assigned].sort() };
  if (!(await setConnectionGroup(c.connectionId, next, expect === 'join' ? null : g.memberId))) {
    logger.info({ event: 'websocket-group-not-stored', connectionId: c.connectionId, group: g.groupId }, 'the connection left the group, closed, or stored a later heartbeat first');
    return false;
  }
  const held = await heldAmong(c.connectionId, g.groupId, [...assigned, ...g.parts]);
  const added = [...assigned].filter((k) => !held.has(k)).map(parseKey);
  await unsubscribeAll(c.connectionId, g.groupId, [...held].filter((k) => !assigned.has(k)));
  if (added.length > 0) {
    const stable = g.isolation === 'read_committed';
    const commits = new Map((await committed(g.groupId, added, { requireStable: stable })).map((o) => [tpKey(o), o.offset]));
    // (each waits out the presence cache before its second delivery: they run side by side)
    await all(added.map((tp) => subscribeAssigned(c, next, host, tp, commits, deadline)));
  }
  return true;
}

const groupFrame = (g: ConnectionGroup, hb: HeartbeatResult) => ({
  type: 'subscribed', group_id: g.groupId, topics: g.topics, member_id: hb.memberId, member_epoch: hb.memberEpoch,
  heartbeat_interval_ms: hb.heartbeatIntervalMs, session_timeout_ms: g.sessionTimeoutMs,
});

/** Leaves the group for a member the connection does not hold (it closed or left meanwhile): never a member nobody serves. */
const leave = (g: Pick<ConnectionGroup, 'groupId' | 'memberId'>) => heartbeat(g.groupId, { memberId: g.memberId, memberEpoch: -1 }).catch((err: unknown) => {
  logger.info({ event: 'websocket-group-leave-failed', group: g.groupId, member: g.memberId, err: (err as Error).message }, 'the member is expired at its session timeout instead');
});

/**
 * Subscribes the connection to a topic as a member of a consumer group (joining it, or adding the
 * topic to the member's subscription), answers `subscribed` with the member's id, epoch and
 * heartbeat interval, and subscribes the partitions the group assigns. A join whose membership
 * cannot be stored (the connection closed, or joined meanwhile) leaves again.
 */
export async function subscribeGroup(s: GroupSubscribe, deadline: number): Promise<void> {
  const c = await connection(s.connectionId);
  const had = c.group;
  if (had && had.groupId !== s.groupId) {
    throw new KafkaError('INVALID_REQUEST', `This connection is a member of group ${had.groupId}: one group per connection (open another for group ${s.groupId}).`);
  }
  const topics = [...new Set([...(had?.topics ?? []), s.topic])].sort();
  const sessionTimeoutMs = s.sessionTimeoutMs ?? had?.sessionTimeoutMs;
  const hb = await heartbeat(s.groupId, {
    ...(had ? { memberId: had.memberId, memberEpoch: had.memberEpoch } : { memberEpoch: 0 }),
    subscription: { topics }, ...(sessionTimeoutMs !== undefined ? { sessionTimeoutMs } : {}),
  });
  const g: ConnectionGroup = {
    groupId: s.groupId, memberId: hb.memberId, memberEpoch: hb.memberEpoch, topics, reset: s.reset, isolation: s.isolation,
    sessionTimeoutMs: sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS, parts: had?.parts ?? [],
  };
  await postFrame(c.connectionId, groupFrame(g, hb));
  if (!(await reconcile(c, g, s.host, hb, had ? 'member' : 'join', deadline)) && !had) await leave(g);
}

/**
 * The member's heartbeat: reconciles what the group assigns now. A member the group no longer
 * knows (its session ran out) or has fenced gives up its partitions and joins again, as Kafka's
 * consumer does after losing them — unless the connection no longer holds it (it left or closed
 * meanwhile), or a heartbeat that overlapped this one already stored a later epoch (then this one
 * is sent again with it).
 */
export async function heartbeatGroup(read: ConnectionRecord, host: string, deadline: number): Promise<void> {
  const { connectionId } = read;
  let c = read;
  for (let attempt = 0; ; attempt++) {
    const g = c.group;
    if (!g) throw notInGroup();
    try {
      const hb = await heartbeat(g.groupId, { memberId: g.memberId, memberEpoch: g.memberEpoch });
      await reconcile(c, g, host, hb, 'member', deadline);
      return;
    } catch (err) {
      if (!isKafkaError(err, 'UNKNOWN_MEMBER_ID') && !isKafkaError(err, 'FENCED_MEMBER_EPOCH')) throw err;
      const now = await getConnection(connectionId);
      if (!now?.group || now.group.memberId !== g.memberId) return; // (left or closed meanwhile: nothing to rejoin)
      if (now.group.memberEpoch > g.memberEpoch && attempt === 0) {
        c = now;
        continue;
      }
      // Lost: its partitions go (delivered past the commits or not), then it joins again and
      // starts them from the committed offsets.
      await unsubscribeAll(connectionId, g.groupId, await heldAmong(connectionId, g.groupId, now.group.parts));
      const rejoined = await heartbeat(g.groupId, { memberId: g.memberId, memberEpoch: 0, subscription: { topics: g.topics }, sessionTimeoutMs: g.sessionTimeoutMs });
      await postFrame(connectionId, groupFrame(g, rejoined));
      await reconcile(now, { ...now.group, parts: [] }, host, rejoined, 'member', deadline);
      return;
    }
  }
}

/**
 * Leaves the group: its partitions unsubscribed, then the membership removed, `unsubscribed` with
 * the group's id answered. The partitions go first, as Kafka's consumer revokes them before it
 * leaves: a delivery of one of them that checks the member after it left would end that
 * subscription with UNKNOWN_MEMBER_ID instead of its `unsubscribed`.
 */
export async function leaveGroup(c: ConnectionRecord): Promise<void> {
  const { connectionId } = c;
  const g = c.group;
  if (!g) throw notInGroup();
  await setConnectionGroup(connectionId, null, g.memberId);
  await unsubscribeAll(connectionId, g.groupId, await heldAmong(connectionId, g.groupId, g.parts));
  await heartbeat(g.groupId, { memberId: g.memberId, memberEpoch: -1 }).catch((err: unknown) => {
    if (!isKafkaError(err, 'UNKNOWN_MEMBER_ID')) throw err; // (expired already: nothing to leave)
  });
  await postFrame(connectionId, { type: 'unsubscribed', group_id: g.groupId });
}

/** At `$disconnect`: the member leaves its group at once rather than at its session's end (nothing is posted: the socket is gone). */
export async function leaveOnDisconnect(connectionId: string): Promise<void> {
  const g = (await getConnection(connectionId))?.group;
  if (g) await leave(g);
}

/**
 * Commits the next offset to read of one of the member's partitions (Kafka's meaning), fenced by
 * the member's epoch and ownership; answers `committed` (with `kept` when the group had committed
 * a later offset, which stays).
 */
export async function commitGroup(c: ConnectionRecord, o: { topic: string; partition: number; offset: number; metadata?: string }): Promise<void> {
  const { connectionId } = c;
  const g = c.group;
  if (!g) throw notInGroup();
  const { kept } = await commit(g.groupId, [o], { memberId: g.memberId, memberEpoch: g.memberEpoch });
  // (`kept`: the group's committed offset is above this one, which is not written; only a reset moves it back)
  await postFrame(connectionId, { type: 'committed', group_id: g.groupId, topic: o.topic, partition: o.partition, offset: o.offset, ...(kept.length > 0 ? { kept: true } : {}) });
}
