/**
 * Consumer group state in the coordination table (docs/architecture.md, "Consumer groups"). Keys:
 * `groups`/`<group>` (the group list); `group#<g>`/`meta` (group epoch, assignor, a digest of what
 * the target was computed from, a pointer to the target — small and of fixed size whatever the
 * group's members and partitions; changed only by compare-and-set on `ver`);
 * `group#<g>`/`member#<id>` (liveness, member epoch, subscription, the partitions it owns now, a
 * REST consumer's positions — so a steady-state heartbeat rewrites one small item);
 * `group#<g>`/`target#<targetId>#<n>` (the target assignment of one group epoch, immutable, split
 * into chunks that each stay far below DynamoDB's 400 KB item limit);
 * `offsets#<g>`/`<topic>#<partition>` (committed offsets). Group writes are not metadata: none
 * bumps the metadata version.
 *
 * Conditional writes:
 * - `writeGroup(w)`: one transaction [meta Put, the group list entry (a new group), member Puts
 *   and Deletes], after unconditional Puts of a new target's chunks.
 *   Condition: the meta item is still at `expectVer` (`ver = :v`; a new group: none,
 *   `attribute_not_exists(pk)`); each member written or deleted still has the liveness it was
 *   decided from (`lastHeartbeatAt = :hb`; a new member: `attribute_not_exists(pk)`).
 *   Effect: the meta item with `ver` + 1 and its target reference; the members; the replaced
 *   target's chunks deleted after the transaction.
 *   Fails: `GroupChanged` (the new chunks are deleted); `Error` for more than MAX_MEMBER_WRITES
 *   members; a store error when the outcome is unknown.
 * - `updateMember(groupId, memberId, fields, memberEpoch?)`: one UpdateItem.
 *   Condition: the member exists (`attribute_exists(pk)`), with `memberEpoch` when given
 *   (`AND memberEpoch = :epoch`).
 *   Effect: the given fields set.
 *   Fails: `UnknownMember`.
 * - `createMember(groupId, m)`: one PutItem.
 *   Condition: no such member (`attribute_not_exists(pk)`).
 *   Effect: the member item.
 *   Fails: `MemberExists`.
 * - `commitOffsets(groupId, offsets, fence, force, list)`: one transaction [the fence's
 *   ConditionCheck of the member item, the group list entry (with `list`), one Put per offset].
 *   Condition: with a fence, the member still has `memberEpoch` and owns every partition committed
 *   (`memberEpoch = :e AND contains(#owned.#t, :p) ...`); unless `force`, each offset is not below
 *   the committed one (`attribute_not_exists(pk) OR #o <= :o`).
 *   Effect: the committed offsets; with `list`, the group listed.
 *   Fails: `CommitRejected` with its reason: `member`, `ownership`, or `backwards` (and the offset's
 *   index).
 * `deleteMember` and `deleteGroupItems` delete unconditionally.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { logger } from '../../logger.js';
import { dynamo } from '../clients.js';
import { groupPk, memberSk, offsetsPk, PENDING_OFFSETS_SK_PREFIX, targetSk } from '../tables.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();
/** Characters of serialized target per chunk item: at most 4 UTF-8 bytes each, so under 400 KB. */
const TARGET_CHUNK_CHARS = 90_000;

/** Partitions by topic (`{ orders: [0, 3] }`): the compact form per-member partition lists are stored in. */
export type PartitionsByTopic = Readonly<Record<string, readonly number[]>>;

/** A target assignment: member id → its partitions. */
export type TargetAssignment = Readonly<Record<string, PartitionsByTopic>>;

export interface GroupMeta {
  readonly groupId: string;
  /** Bumped whenever membership, subscriptions or the subscribed partitions change (KIP-848's group epoch). */
  readonly groupEpoch: number;
  readonly assignor: string;
  /** Where the target assignment of `groupEpoch` is stored (absent: nobody is assigned anything). */
  readonly target?: { readonly id: string; readonly chunks: number };
  /** A digest of what the target was computed from (members, their topics, partition counts). */
  readonly subscriptionHash: string;
  readonly createdAt: string;
  /** Compare-and-set token: bumped by every change of membership, ownership or target. */
  readonly ver: number;
}

export interface Subscription {
  readonly topics?: readonly string[];
  readonly pattern?: string;
  /**
   * With authorization on, for a pattern: the matching topics the member's principal may use, as
   * resolved at the member's own last heartbeat (lib/groups/coordinator.ts); the pattern covers
   * only these (and only while they exist).
   */
  readonly resolvedTopics?: readonly string[];
}

/** The embedded formats a REST Proxy v2 consumer instance reads in. */
export const REST_CONSUMER_FORMATS = ['binary', 'json', 'avro', 'jsonschema', 'protobuf'] as const;
export type RestConsumerFormat = (typeof REST_CONSUMER_FORMATS)[number];

/** A REST Proxy v2 consumer instance's settings and read positions. */
export interface RestConsumerState {
  readonly format: RestConsumerFormat;
  readonly autoOffsetReset: 'earliest' | 'latest' | 'none';
  readonly autoCommit: boolean;
  readonly fetchMinBytes: number;
  readonly requestTimeoutMs: number;
  /** `topic#partition` → next offset to read. */
  readonly positions: Readonly<Record<string, number>>;
}

export interface MemberRecord {
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly subscription: Subscription | null;
  /** Manually assigned partitions (`topic#partition`), outside the group's balancing. */
  readonly manual?: readonly string[];
  /**
   * The partitions the member owns now, including those it is still revoking. Changed only in a
   * group write (compare-and-set on the meta item), so no two members ever list one partition.
   */
  readonly owned?: PartitionsByTopic;
  /** When the member last heartbeated: its liveness, and the version an expiry is conditioned on. */
  readonly lastHeartbeatAt: number;
  readonly sessionTimeoutMs: number;
  readonly joinedAt: string;
  readonly rest?: RestConsumerState;
}

export interface CommittedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly metadata: string;
  readonly committedAt: number;
  /**
   * The id of the topic the offset was committed for: a topic deleted and created again under the
   * same name is another topic, whose offsets start afresh (absent on offsets committed before ids were kept).
   */
  readonly topicId?: string;
}

export interface GroupState {
  readonly meta?: GroupMeta;
  /** The target assignment the meta item points at ({} when none). */
  readonly target: TargetAssignment;
  readonly members: readonly MemberRecord[];
}

const strip = <T>(item: Record<string, unknown>): T => {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
};

async function queryAll(pk: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(new QueryCommand({
      TableName: table(), KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true, ExclusiveStartKey: start,
    }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

const READ_ATTEMPTS = 5;

/**
 * A group's meta item, target assignment and members, in one strongly consistent Query. A target
 * replaced (and its chunks deleted) between the pages of the Query is read again; a target whose
 * chunks are still missing after READ_ATTEMPTS reads counts as none (meta `target` undefined and
 * `subscriptionHash` empty, so the next heartbeat recomputes it).
 */
export async function readGroup(groupId: string): Promise<GroupState> {
  for (let attempt = 1; ; attempt++) {
    const items = await queryAll(groupPk(groupId));
    const metaItem = items.find((i) => i.sk === 'meta');
    const meta = metaItem ? strip<GroupMeta>(metaItem) : undefined;
    const members = items.filter((i) => String(i.sk).startsWith('member#')).map((i) => strip<MemberRecord>(i));
    // A meta of the older layout (target inline, no chunk reference) counts as no target: the next
    // heartbeat recomputes it.
    if (!meta?.target || typeof meta.target.id !== 'string') return { ...(meta ? { meta: { ...meta, target: undefined } } : {}), target: {}, members };
    const ref = meta.target;
    const chunks = Array.from({ length: ref.chunks }, (_, n) => items.find((i) => i.sk === targetSk(ref.id, n))?.data as string | undefined);
    if (chunks.every((c) => c !== undefined)) return { meta, target: JSON.parse(chunks.join('')) as TargetAssignment, members };
    if (attempt >= READ_ATTEMPTS) {
      // Not a replacement racing the Query: the chunks are gone (a lost write's cleanup, an
      // operator). Throwing would make the group unreadable for good, since only a heartbeat that
      // reads it can rewrite the meta; instead it counts as no target, and the empty digest makes
      // the next heartbeat recompute and store a new one.
      logger.warn({ event: 'group-target-missing', group: groupId, target: ref.id, reads: attempt }, 'target chunks missing; the target is recomputed');
      return { meta: { ...meta, target: undefined, subscriptionHash: '' }, target: {}, members };
    }
  }
}

export async function listGroupIds(): Promise<string[]> {
  return (await queryAll('groups')).map((i) => i.sk as string).sort();
}

export class GroupChanged extends Error {
  override readonly name = 'GroupChanged';
}

export interface GroupWrite {
  /** The new meta item (its `target` is set here); written only if the stored one still has `expectVer` (null: must not exist). */
  readonly meta: Omit<GroupMeta, 'target'>;
  readonly expectVer: number | null;
  /** A new target assignment (written to new chunks first), or undefined to keep `keepTarget`. */
  readonly target?: TargetAssignment;
  /** The stored meta's target reference, kept when `target` is undefined, deleted when replaced. */
  readonly keepTarget?: GroupMeta['target'];
  /** Members to write; each on condition that its liveness is still what was read (`readHeartbeatAt`; null: must not exist). */
  readonly putMembers: readonly { readonly member: MemberRecord; readonly readHeartbeatAt: number | null }[];
  /** Members to delete (left or expired), on the same condition: a member that heartbeated since is not removed. */
  readonly deleteMembers: readonly { readonly memberId: string; readonly readHeartbeatAt: number }[];
}

/** Members one group write may put or delete: they go in one transaction with the meta item. */
export const MAX_MEMBER_WRITES = MAX_TRANSACTION_ITEMS - 2;

/** Best effort: a leftover chunk costs storage only, and deleteGroupItems removes it. */
async function deleteTargetChunks(groupId: string, ref: NonNullable<GroupMeta['target']>): Promise<void> {
  try {
    for (let n = 0; n < ref.chunks; n += 25) {
      const keys = Array.from({ length: Math.min(25, ref.chunks - n) }, (_, i) => ({ pk: groupPk(groupId), sk: targetSk(ref.id, n + i) }));
      await db().send(new BatchWriteCommand({ RequestItems: { [table()]: keys.map((Key) => ({ DeleteRequest: { Key } })) } }));
    }
  } catch (err) {
    logger.warn({ event: 'group-target-cleanup-failed', group: groupId, target: ref.id, err: (err as Error).message }, 'could not delete old target chunks');
  }
}

/**
 * Writes a group change in one transaction: the meta item by compare-and-set on `ver`, the member
 * puts and deletes each on condition of the liveness (`lastHeartbeatAt`) it was decided from.
 * A new target assignment is first written to new, immutable chunk items the new meta points at;
 * the replaced target's chunks are deleted after the transaction. The new chunks are deleted only
 * when the transaction certainly did not apply (`ConditionFailed`); after a timeout or 5xx it may
 * have, so they are left (readGroup treats a target with missing chunks as none, too).
 *
 *   A reads B (last heartbeat t0, expired)   B heartbeats (t1)        A deletes B if lastHeartbeatAt = t0
 *   ─────────────────────────────────────────────────────────────────▶ fails: GroupChanged, A re-reads
 *
 * Errors: `GroupChanged` when someone changed the group, or a member it writes, first (re-read
 * and decide again); `Error` for more than MAX_MEMBER_WRITES members; a store error (timeout,
 * 5xx) when the outcome is unknown (re-read: the write may have applied).
 */
export async function writeGroup(w: GroupWrite): Promise<void> {
  const g = w.meta.groupId;
  if (w.putMembers.length + w.deleteMembers.length > MAX_MEMBER_WRITES) throw new Error(`at most ${MAX_MEMBER_WRITES} member writes per group write`);
  let newRef: GroupMeta['target'];
  if (w.target !== undefined && Object.keys(w.target).length > 0) {
    const json = JSON.stringify(w.target);
    newRef = { id: randomUUID(), chunks: Math.max(1, Math.ceil(json.length / TARGET_CHUNK_CHARS)) };
    for (let n = 0; n < newRef.chunks; n++) {
      await db().send(new PutCommand({ TableName: table(), Item: { pk: groupPk(g), sk: targetSk(newRef.id, n), data: json.slice(n * TARGET_CHUNK_CHARS, (n + 1) * TARGET_CHUNK_CHARS) } }));
    }
  }
  const ref = w.target !== undefined ? newRef : w.keepTarget;
  const liveness = (seen: number | null) => (seen === null
    ? { ConditionExpression: 'attribute_not_exists(pk)' }
    : { ConditionExpression: 'lastHeartbeatAt = :hb', ExpressionAttributeValues: { ':hb': seen } });
  const items = [
    {
      Put: {
        TableName: table(),
        Item: { pk: groupPk(g), sk: 'meta', ...w.meta, ...(ref ? { target: ref } : {}), ver: (w.expectVer ?? 0) + 1 },
        ...(w.expectVer === null
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': w.expectVer } }),
      },
    },
    ...(w.expectVer === null ? [{ Put: { TableName: table(), Item: { pk: 'groups', sk: g } } }] : []),
    ...w.putMembers.map((p) => ({ Put: { TableName: table(), Item: { pk: groupPk(g), sk: memberSk(p.member.memberId), ...p.member }, ...liveness(p.readHeartbeatAt) } })),
    ...w.deleteMembers.map((d) => ({ Delete: { TableName: table(), Key: { pk: groupPk(g), sk: memberSk(d.memberId) }, ...liveness(d.readHeartbeatAt) } })),
  ];
  try {
    await transactWrite(db(), items);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) {
      // A timeout or 5xx: the transaction may have applied, and then the meta points at the new
      // chunks. They are left; a later write replacing the target, or deleteGroupItems, removes them.
      throw err;
    }
    // Cancelled: this attempt applied nothing. The chunks are deleted unless the meta as it is
    // now points at them (an earlier attempt of this write applied and its answer was lost).
    const current = err.at(0)?.current as Partial<GroupMeta> | undefined;
    if (newRef && current?.target?.id !== newRef.id) await deleteTargetChunks(g, newRef);
    throw new GroupChanged(`group ${g} changed`);
  }
  if (w.target !== undefined && w.keepTarget && w.keepTarget.id !== newRef?.id) await deleteTargetChunks(g, w.keepTarget);
}

export class UnknownMember extends Error {
  override readonly name = 'UnknownMember';
}

/**
 * Updates a member without touching the group (a steady-state heartbeat, a REST consumer's new
 * positions). Condition: the member exists (and has `memberEpoch` when given).
 * Errors: `UnknownMember`.
 */
export async function updateMember(groupId: string, memberId: string, fields: Partial<Pick<MemberRecord, 'lastHeartbeatAt' | 'memberEpoch' | 'rest' | 'manual'>>, memberEpoch?: number): Promise<void> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v], i) => {
    names[`#f${i}`] = k;
    values[`:v${i}`] = v;
    return `#f${i} = :v${i}`;
  });
  if (sets.length === 0) return;
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: groupPk(groupId), sk: memberSk(memberId) },
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: memberEpoch === undefined ? 'attribute_exists(pk)' : 'attribute_exists(pk) AND memberEpoch = :epoch',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ...values, ...(memberEpoch === undefined ? {} : { ':epoch': memberEpoch }) },
    }));
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') throw new UnknownMember(`member ${memberId} of group ${groupId} is gone or at another epoch`);
    throw err;
  }
}

/** One member's item (a strongly consistent GetItem), or undefined when it is not in the group. */
export async function getMember(groupId: string, memberId: string): Promise<MemberRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: groupPk(groupId), sk: memberSk(memberId) }, ConsistentRead: true }));
  return out.Item ? strip<MemberRecord>(out.Item) : undefined;
}

/** Creates a member that is not part of the assignment yet (a REST instance). Errors: `MemberExists`. */
export async function createMember(groupId: string, m: MemberRecord): Promise<void> {
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { pk: groupPk(groupId), sk: memberSk(m.memberId), ...m }, ConditionExpression: 'attribute_not_exists(pk)',
    }));
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') throw new MemberExists(`member ${m.memberId} exists in group ${groupId}`);
    throw err;
  }
}

export class MemberExists extends Error {
  override readonly name = 'MemberExists';
}

/** Deletes a member that owns nothing (no group change needed). */
export async function deleteMember(groupId: string, memberId: string): Promise<void> {
  await db().send(new DeleteCommand({ TableName: table(), Key: { pk: groupPk(groupId), sk: memberSk(memberId) } }));
}

export interface CommitFence {
  readonly memberId: string;
  readonly memberEpoch: number;
}

export class CommitRejected extends Error {
  override readonly name = 'CommitRejected';
  constructor(readonly reason: 'member' | 'ownership' | 'backwards', readonly index?: number) {
    super(`commit rejected: ${reason}`);
  }
}

/**
 * Commits offsets in one transaction; with `list` (by default without a fence: a reset, a commit by
 * no member) it also puts the group in the group list, where a member's join puts it otherwise, so
 * a group that only has offsets is listed (Kafka lists it as Empty). One more write unit for those
 * commits only; a REST Proxy instance's auto-commits, whose group has the instance's member item,
 * pass `list` false.
 * Conditions: with a fence, the member still has `memberEpoch` and owns every partition committed
 * (one check on its member item); each offset is not below the committed one (offsets move
 * backwards only by a reset, `force`), unless that one was committed for another topic id.
 * Errors: `CommitRejected` saying which condition failed (`index` of a backwards offset).
 */
export async function commitOffsets(groupId: string, offsets: readonly CommittedOffset[], fence: CommitFence | null, force = false, list = fence === null): Promise<void> {
  if (offsets.length === 0) return;
  if (offsets.length > MAX_TRANSACTION_ITEMS - 1) throw new Error(`at most ${MAX_TRANSACTION_ITEMS - 1} offsets per commit`);
  // The member's item holds both its epoch and what it owns, so one check fences the commit.
  const byTopic = new Map<string, number[]>();
  for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), o.partition]);
  const topics = [...byTopic.keys()];
  const fenceItems = fence ? [
    {
      ConditionCheck: {
        TableName: table(), Key: { pk: groupPk(groupId), sk: memberSk(fence.memberId) },
        ConditionExpression: ['memberEpoch = :e', ...offsets.map((o, i) => `contains(#owned.#t${topics.indexOf(o.topic)}, :p${i})`)].join(' AND '),
        ExpressionAttributeNames: { '#owned': 'owned', ...Object.fromEntries(topics.map((t, i) => [`#t${i}`, t])) },
        ExpressionAttributeValues: { ':e': fence.memberEpoch, ...Object.fromEntries(offsets.map((o, i) => [`:p${i}`, o.partition])) },
      },
    },
  ] : [];
  const listed = list ? [{ Put: { TableName: table(), Item: { pk: 'groups', sk: groupId } } }] : [];
  try {
    await transactWrite(db(), [
      ...fenceItems,
      ...listed,
      ...offsets.map((o) => ({
        Put: {
          TableName: table(), Item: { pk: offsetsPk(groupId), sk: `${o.topic}#${o.partition}`, ...o },
          ...(force ? {} : o.topicId === undefined
            ? { ConditionExpression: 'attribute_not_exists(pk) OR #o <= :o', ExpressionAttributeNames: { '#o': 'offset' }, ExpressionAttributeValues: { ':o': o.offset } }
            // (an offset of an earlier topic of the same name does not hold a new one back)
            : { ConditionExpression: 'attribute_not_exists(pk) OR #o <= :o OR (attribute_exists(topicId) AND topicId <> :id)', ExpressionAttributeNames: { '#o': 'offset' }, ExpressionAttributeValues: { ':o': o.offset, ':id': o.topicId } }),
        },
      })),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (fence && err.at(0)?.code === 'ConditionalCheckFailed') {
      throw new CommitRejected(err.at(0)?.current?.memberEpoch === fence.memberEpoch ? 'ownership' : 'member');
    }
    const backwards = err.items.find((i) => i.code === 'ConditionalCheckFailed');
    if (backwards) throw new CommitRejected('backwards', backwards.index - fenceItems.length - listed.length);
    throw err;
  }
}

/** A group's committed offsets. */
export async function readOffsets(groupId: string): Promise<CommittedOffset[]> {
  return (await readOffsetsAndPending(groupId)).offsets;
}

/** A transaction holding offsets of the group, not committed yet (lib/storage/coordination/transactions.ts). */
export interface PendingOffsetsItem {
  readonly transactionalId: string;
  readonly producerId: number;
  readonly epoch: number;
  readonly partitions: readonly string[];
}

/** A group's committed offsets and the transactions holding offsets for it, in one Query. */
export async function readOffsetsAndPending(groupId: string): Promise<{ offsets: CommittedOffset[]; pending: PendingOffsetsItem[] }> {
  const items = await queryAll(offsetsPk(groupId));
  const isPending = (i: Record<string, unknown>) => String(i.sk).startsWith(PENDING_OFFSETS_SK_PREFIX);
  return {
    offsets: items.filter((i) => !isPending(i)).map((i) => strip<CommittedOffset>(i)),
    pending: items.filter(isPending).map((i) => ({ transactionalId: i.transactionalId as string, producerId: i.producerId as number, epoch: i.epoch as number, partitions: i.partitions as string[] })),
  };
}

/** Deletes a group: meta, members, offsets and its list entry. */
export async function deleteGroupItems(groupId: string): Promise<void> {
  const keys = [
    ...(await queryAll(groupPk(groupId))).map((i) => ({ pk: i.pk, sk: i.sk })),
    ...(await queryAll(offsetsPk(groupId))).map((i) => ({ pk: i.pk, sk: i.sk })),
    { pk: 'groups', sk: groupId },
  ];
  for (let i = 0; i < keys.length; i += 25) {
    await db().send(new BatchWriteCommand({ RequestItems: { [table()]: keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } })) } }));
  }
}
