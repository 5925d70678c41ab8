/**
 * Consumer group state in the coordination table (DESIGN §8). Keys:
 * `groups`/`<group>` (the group list); `group#<g>`/`meta` (group epoch, target assignment, who owns
 * each partition — one item, changed only by compare-and-set on `ver`); `group#<g>`/`member#<id>`
 * (liveness, member epoch, subscription, a REST consumer's positions — so a steady-state heartbeat
 * rewrites one small item); `offsets#<g>`/`<topic>#<partition>` (committed offsets).
 */
import { BatchWriteCommand, DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../config.js';
import { dynamo } from './clients.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS, transactWrite } from './transact.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();
const groupPk = (g: string): string => `group#${g}`;
const offsetsPk = (g: string): string => `offsets#${g}`;
const memberSk = (m: string): string => `member#${m}`;

export interface GroupMeta {
  readonly groupId: string;
  /** Bumped whenever membership, subscriptions or the subscribed partitions change (KIP-848's group epoch). */
  readonly groupEpoch: number;
  readonly assignor: string;
  /** The target assignment of `groupEpoch`: member id → `topic#partition` keys. */
  readonly target: Readonly<Record<string, readonly string[]>>;
  /** Who owns each partition now: `topic#partition` → member id. A partition has one owner at most. */
  readonly owners: Readonly<Record<string, string>>;
  /** What the target was computed from (subscribed topics and their partition counts). */
  readonly subscriptionHash: string;
  readonly createdAt: string;
  /** Compare-and-set token. */
  readonly ver: number;
}

export interface Subscription {
  readonly topics?: readonly string[];
  readonly pattern?: string;
}

/** A REST Proxy v2 consumer instance's settings and read positions. */
export interface RestConsumerState {
  readonly format: 'binary' | 'json';
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
}

export interface GroupState {
  readonly meta?: GroupMeta;
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

/** A group's meta item and members, in one strongly consistent Query. */
export async function readGroup(groupId: string): Promise<GroupState> {
  const items = await queryAll(groupPk(groupId));
  const meta = items.find((i) => i.sk === 'meta');
  return {
    ...(meta ? { meta: strip<GroupMeta>(meta) } : {}),
    members: items.filter((i) => String(i.sk).startsWith('member#')).map((i) => strip<MemberRecord>(i)),
  };
}

export async function listGroupIds(): Promise<string[]> {
  return (await queryAll('groups')).map((i) => i.sk as string).sort();
}

export class GroupChanged extends Error {
  override readonly name = 'GroupChanged';
}

export interface GroupWrite {
  /** The new meta item; written only if the stored one still has `expectVer` (null: must not exist). */
  readonly meta: GroupMeta;
  readonly expectVer: number | null;
  readonly putMembers: readonly MemberRecord[];
  readonly deleteMembers: readonly string[];
}

/**
 * Writes a group change: the meta item by compare-and-set, plus member puts and deletes, in one
 * transaction (members beyond its size limit follow in later ones).
 * Errors: `GroupChanged` when someone changed the group first (re-read and decide again).
 */
export async function writeGroup(w: GroupWrite): Promise<void> {
  const metaPut = {
    Put: {
      TableName: table(),
      Item: { pk: groupPk(w.meta.groupId), sk: 'meta', ...w.meta, ver: (w.expectVer ?? 0) + 1 },
      ...(w.expectVer === null
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : { ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': w.expectVer } }),
    },
  };
  const others = [
    ...w.putMembers.map((m) => ({ Put: { TableName: table(), Item: { pk: groupPk(w.meta.groupId), sk: memberSk(m.memberId), ...m } } })),
    ...w.deleteMembers.map((id) => ({ Delete: { TableName: table(), Key: { pk: groupPk(w.meta.groupId), sk: memberSk(id) } } })),
  ];
  const first = others.slice(0, MAX_TRANSACTION_ITEMS - 2);
  try {
    await transactWrite(db(), [
      metaPut,
      ...(w.expectVer === null ? [{ Put: { TableName: table(), Item: { pk: 'groups', sk: w.meta.groupId } } }] : []),
      ...first,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new GroupChanged(`group ${w.meta.groupId} changed`);
    throw err;
  }
  for (let i = first.length; i < others.length; i += MAX_TRANSACTION_ITEMS) await transactWrite(db(), others.slice(i, i + MAX_TRANSACTION_ITEMS));
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
 * Commits offsets in one transaction.
 * Conditions: with a fence, the member still has `memberEpoch` and owns every partition committed;
 * each offset is not below the committed one (offsets move backwards only by a reset, `force`).
 * Errors: `CommitRejected` saying which condition failed (`index` of a backwards offset).
 */
export async function commitOffsets(groupId: string, offsets: readonly CommittedOffset[], fence: CommitFence | null, force = false): Promise<void> {
  if (offsets.length === 0) return;
  if (offsets.length > MAX_TRANSACTION_ITEMS - 2) throw new Error(`at most ${MAX_TRANSACTION_ITEMS - 2} offsets per commit`);
  const fenceItems = fence ? [
    {
      ConditionCheck: {
        TableName: table(), Key: { pk: groupPk(groupId), sk: memberSk(fence.memberId) },
        ConditionExpression: 'memberEpoch = :e', ExpressionAttributeValues: { ':e': fence.memberEpoch },
      },
    },
    {
      ConditionCheck: {
        TableName: table(), Key: { pk: groupPk(groupId), sk: 'meta' },
        ConditionExpression: offsets.map((_, i) => `owners.#k${i} = :m`).join(' AND '),
        ExpressionAttributeNames: Object.fromEntries(offsets.map((o, i) => [`#k${i}`, `${o.topic}#${o.partition}`])),
        ExpressionAttributeValues: { ':m': fence.memberId },
      },
    },
  ] : [];
  try {
    await transactWrite(db(), [
      ...fenceItems,
      ...offsets.map((o) => ({
        Put: {
          TableName: table(), Item: { pk: offsetsPk(groupId), sk: `${o.topic}#${o.partition}`, ...o },
          ...(force ? {} : { ConditionExpression: 'attribute_not_exists(pk) OR #o <= :o', ExpressionAttributeNames: { '#o': 'offset' }, ExpressionAttributeValues: { ':o': o.offset } }),
        },
      })),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (fence && err.at(0)?.code === 'ConditionalCheckFailed') throw new CommitRejected('member');
    if (fence && err.at(1)?.code === 'ConditionalCheckFailed') throw new CommitRejected('ownership');
    const backwards = err.items.find((i) => i.code === 'ConditionalCheckFailed');
    if (backwards) throw new CommitRejected('backwards', backwards.index - fenceItems.length);
    throw err;
  }
}

/** A group's committed offsets. */
export async function readOffsets(groupId: string): Promise<CommittedOffset[]> {
  return (await queryAll(offsetsPk(groupId))).map((i) => strip<CommittedOffset>(i));
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
