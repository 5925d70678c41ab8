/**
 * The admin client, in kafkajs's names and shapes where the semantics match: topics (create,
 * delete, describe, add partitions, configs), offsets, groups (list, describe, lag, reset),
 * client quotas, ACLs, transactions (Kafka's Admin names: transactions-admin.ts), push
 * subscriptions (subscriptions-admin.ts) and the cluster
 * (brokers, controller); and Tributary's own views for consoles (cluster-views.ts): the metadata
 * view, the controller lease, partitions with every replica's offsets, segments, and a message
 * browser's reads. Reads are tolerant of fields they do not know, and of a cluster's `controller`
 * being an object or a link.
 */
import { aclDescription, entryJson, filterQuery, groupByResource, type AclDescription, type AclEntry, type AclFilter } from './acls.js';
import {
  clusterMetadata, controllerDescription, nextFromOffset, partitionDescription, segmentDescription, tierBounds,
  type ClusterMetadata, type ControllerDescription, type LogTiers, type PartitionDescription, type SegmentDescription,
} from './cluster-views.js';
import type { Connection, FetchResult } from './connection.js';
import { isRetriable, TributaryError, TributaryProtocolError } from './errors.js';
import { withRetry } from './retry.js';
import {
  createSubscription, deleteSubscription, describeSubscription, listSubscriptions,
  type CreatedSubscription, type CreateSubscriptionOptions, type SubscriptionDescription, type SubscriptionDetails,
} from './subscriptions-admin.js';
import {
  abortTransaction, describeProducers, describeTransactions, endHangingTransactions, listTransactions,
  type EndedHangingTransaction, type ListTransactionsOptions, type ProducerStateDescription, type TransactionDescription,
} from './transactions-admin.js';

/** kafkajs's ConfigResourceTypes (Kafka's numbers). */
export const ConfigResourceTypes = { TOPIC: 2, BROKER: 4 } as const;

export interface ITopicConfig {
  readonly topic: string;
  /** @default the cluster's (1) */
  readonly numPartitions?: number;
  /** @default min(3, brokers) */
  readonly replicationFactor?: number;
  readonly configEntries?: { name: string; value: string }[];
}

export interface PartitionMetadata {
  readonly partitionId: number;
  readonly leader: number;
  readonly leaderEpoch?: number;
  readonly replicas: number[];
  readonly isr: number[];
  readonly offlineReplicas: number[];
  readonly partitionErrorCode: number;
}

export interface ConfigEntry {
  readonly configName: string;
  readonly configValue: string | null;
  readonly isDefault: boolean;
  readonly configSource: string | null;
  readonly isSensitive: boolean;
  readonly readOnly: boolean;
}

export interface BrokerDescription {
  readonly nodeId: number;
  readonly host: string | null;
  readonly port: number | null;
  readonly rack: string | null;
  readonly state?: string;
  readonly replicaCount?: number;
  readonly leaderCount?: number;
  readonly bytes?: number | null;
}

export interface GroupLag {
  readonly topic: string;
  readonly partition: number;
  readonly currentOffset: number | null;
  readonly logEndOffset: number;
  /** Where a read_committed consumer stops: below the log end while a transaction is open on the partition. */
  readonly lastStableOffset: number;
  readonly lag: number;
  readonly memberId: string | null;
}

/** Where a reset moves a group's offsets. */
export type ResetTo = 'earliest' | 'latest' | { offset: number } | { timestamp: number | string } | { shiftBy: number };

/** Kafka's client quota keys: bytes per second, and requests per second. */
export interface ClientQuotas {
  producer_byte_rate?: number;
  consumer_byte_rate?: number;
  request_rate?: number;
}

export interface ClientQuotaEntry {
  /** `User:<name>`, or `<default>` for Kafka's default entity. */
  readonly principal: string;
  readonly quotas: ClientQuotas;
}

const QUOTA_KEYS = ['producer_byte_rate', 'consumer_byte_rate', 'request_rate'] as const;

/** What `fetchMessages` reads: a partition, from an offset, a time, or the log start. */
export interface FetchMessagesOptions {
  readonly topic: string;
  readonly partition: number;
  /** The first offset to read. Wins over `timestamp`. */
  readonly offset?: number;
  /** Read from the first record at or after this time (epoch ms, or an ISO-8601 date-time). */
  readonly timestamp?: number | string;
  /** About this many bytes of batches at most (the server always returns one whole batch). @default the server's, 1 MiB */
  readonly maxBytes?: number;
  readonly signal?: AbortSignal;
}

type Json = Record<string, unknown>;
const ids = (v: unknown): number[] => (Array.isArray(v) ? v.map((x) => (typeof x === 'number' ? x : Number((x as Json).broker_id))).filter(Number.isFinite) : []);
const enc = encodeURIComponent;

/**
 * Cluster administration. Create with `tributary.admin()`.
 *
 * @example
 * ```ts
 * const admin = tributary.admin();
 * await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] });
 * console.log(await admin.fetchTopicMetadata({ topics: ['orders'] }));
 * ```
 */
export class Admin {
  constructor(private readonly conn: Connection) {}

  async connect(): Promise<void> {
    await this.conn.clusterId();
  }

  async disconnect(): Promise<void> {}

  private async get<T = Json>(rest: string, query?: Record<string, string | number | undefined>): Promise<T> {
    return this.conn.call<T>('GET', await this.conn.v3(rest), query ? { query } : {});
  }

  /**
   * A describe: retried as any read, except a 404, which is final (the admin routes read fresh
   * metadata: an unknown topic or partition will not appear by asking again).
   */
  private async describe<T = Json>(rest: string, query?: Record<string, string | number | undefined>): Promise<T> {
    const path = await this.conn.v3(rest);
    const final = (e: unknown) => e instanceof TributaryProtocolError && e.status === 404;
    return withRetry(async () => (await this.conn.transport.call<T>('GET', path, query ? { query } : {})).body, this.conn.retry, (e) => isRetriable(e) && !final(e));
  }

  private async send<T = Json>(method: string, rest: string, body?: unknown): Promise<T> {
    return (await this.conn.transport.call<T>(method, await this.conn.v3(rest), body !== undefined ? { body } : {})).body;
  }

  // --- topics -----------------------------------------------------------------------------------

  /** Every topic's name. */
  listTopics(): Promise<string[]> {
    return this.conn.topicNames();
  }

  /** Creates topics; resolves true when every one was created (false when one existed already, as kafkajs). */
  async createTopics(o: { topics: ITopicConfig[]; validateOnly?: boolean }): Promise<boolean> {
    let all = true;
    for (const t of o.topics) {
      try {
        await this.send('POST', '/topics', {
          topic_name: t.topic,
          ...(t.numPartitions !== undefined ? { partitions_count: t.numPartitions } : {}),
          ...(t.replicationFactor !== undefined ? { replication_factor: t.replicationFactor } : {}),
          ...(t.configEntries ? { configs: t.configEntries } : {}),
          ...(o.validateOnly ? { validate_only: true } : {}),
        });
      } catch (e) {
        if (e instanceof TributaryProtocolError && e.type === 'TOPIC_ALREADY_EXISTS') all = false;
        else throw e;
      }
    }
    return all;
  }

  async deleteTopics(o: { topics: string[] }): Promise<void> {
    for (const t of o.topics) await this.send('DELETE', `/topics/${enc(t)}`);
  }

  /** Grows topics to `count` partitions (Kafka's CreatePartitions). */
  async createPartitions(o: { topicPartitions: { topic: string; count: number }[] }): Promise<boolean> {
    for (const tp of o.topicPartitions) await this.send('PATCH', `/topics/${enc(tp.topic)}`, { partitions_count: tp.count });
    return true;
  }

  /** Partitions of the topics (every topic without `topics`): leader, replicas, ISR. */
  async fetchTopicMetadata(o: { topics?: string[] } = {}): Promise<{ topics: { name: string; partitions: PartitionMetadata[] }[] }> {
    const names = o.topics ?? (await this.listTopics());
    const topics = await Promise.all(names.map(async (name) => {
      const r = await this.get<{ data: Json[] }>(`/topics/${enc(name)}/partitions`);
      return { name, partitions: r.data.map((p) => partitionMetadata(p)) };
    }));
    return { topics };
  }

  /** One topic's partitions with their offsets (`offset` and `high` are the high watermark, `low` the log start). */
  async fetchTopicOffsets(topic: string): Promise<{ partition: number; offset: string; high: string; low: string }[]> {
    const n = await this.conn.partitionCount(topic, true);
    return Promise.all(Array.from({ length: n }, async (_, partition) => {
      const o = await this.conn.listOffset(topic, partition, 'latest');
      return { partition, offset: String(o.high), high: String(o.high), low: String(o.low) };
    }));
  }

  /** Per partition, the first offset at or after `timestamp` (the high watermark when none is that recent). */
  async fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number): Promise<{ partition: number; offset: string }[]> {
    const n = await this.conn.partitionCount(topic, true);
    return Promise.all(Array.from({ length: n }, async (_, partition) => {
      const o = await this.conn.listOffset(topic, partition, timestamp ?? 'latest');
      return { partition, offset: String(o.offset ?? o.high) };
    }));
  }

  /** Topic configs (type 2) or cluster-wide broker configs (type 4), all or the names asked for. */
  async describeConfigs(o: { resources: { type: number; name: string; configNames?: string[] }[] }): Promise<{ resources: { resourceType: number; resourceName: string; configEntries: ConfigEntry[] }[] }> {
    const resources = await Promise.all(o.resources.map(async (r) => {
      const r2 = await this.get<{ data: Json[] }>(configPath(r));
      const entries = r2.data
        .filter((c) => !r.configNames || r.configNames.includes(String(c.name)))
        .map((c): ConfigEntry => ({
          configName: String(c.name), configValue: (c.value as string | null) ?? null, isDefault: Boolean(c.is_default),
          configSource: (c.source as string | null) ?? null, isSensitive: Boolean(c.is_sensitive), readOnly: Boolean(c.is_read_only),
        }));
      return { resourceType: r.type, resourceName: r.name, configEntries: entries };
    }));
    return { resources };
  }

  /** Sets configs (an entry with `value: null` goes back to its default), all of a resource at once. */
  async alterConfigs(o: { validateOnly?: boolean; resources: { type: number; name: string; configEntries: { name: string; value: string | null }[] }[] }): Promise<void> {
    for (const r of o.resources) {
      await this.send('POST', `${configPath(r)}:alter`, {
        data: r.configEntries.map((c) => (c.value === null ? { name: c.name, operation: 'DELETE' } : { name: c.name, value: c.value })),
        ...(o.validateOnly ? { validate_only: true } : {}),
      });
    }
  }

  // --- groups -----------------------------------------------------------------------------------

  async listGroups(): Promise<{ groups: { groupId: string; protocolType: string; state: string }[] }> {
    const r = await this.get<{ data: Json[] }>('/consumer-groups');
    return { groups: r.data.map((g) => ({ groupId: String(g.consumer_group_id), protocolType: 'consumer', state: String(g.state ?? '') })) };
  }

  /** Groups with state, assignor and members (each member's assignment). */
  async describeGroups(groupIds: string[]): Promise<{ groups: { groupId: string; state: string; protocol: string; protocolType: string; members: { memberId: string; clientId: string; memberEpoch: number | null; assignment: { topic: string; partition: number }[] }[] }[] }> {
    const groups = await Promise.all(groupIds.map(async (groupId) => {
      const [g, members] = await Promise.all([this.get(`/consumer-groups/${enc(groupId)}`), this.get<{ data: Json[] }>(`/consumer-groups/${enc(groupId)}/consumers`)]);
      return {
        groupId, state: String(g.state ?? ''), protocol: String(g.partition_assignor ?? ''), protocolType: 'consumer',
        members: members.data.map((m) => ({
          memberId: String(m.consumer_id), clientId: String(m.client_id ?? ''), memberEpoch: (m.member_epoch as number | undefined) ?? null,
          // (`assignments` is a `{related}` link in REST Proxy v3; Tributary also inlines `assigned_partitions`)
          assignment: (Array.isArray(m.assignments) ? m.assignments : Array.isArray(m.assigned_partitions) ? m.assigned_partitions : []) as { topic: string; partition: number }[],
        })),
      };
    }));
    return { groups };
  }

  /** Committed offsets of a group (kafkajs's shape), for `topics` or every topic it committed. */
  async fetchOffsets(o: { groupId: string; topics?: string[] }): Promise<{ topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[]> {
    const r = await this.get<{ data: Json[] }>(`/consumer-groups/${enc(o.groupId)}/offsets`);
    const by = new Map<string, { partition: number; offset: string; metadata: string | null }[]>();
    for (const t of o.topics ?? []) by.set(t, []);
    for (const c of r.data) {
      const topic = String(c.topic_name);
      if (o.topics && !o.topics.includes(topic)) continue;
      by.set(topic, [...(by.get(topic) ?? []), { partition: Number(c.partition_id), offset: String(c.offset), metadata: (c.metadata as string | null) ?? null }]);
    }
    return [...by].map(([topic, partitions]) => ({ topic, partitions: partitions.sort((a, b) => a.partition - b.partition) }));
  }

  /** Per partition: committed offset, log end offset, last stable offset, lag and owner. */
  async fetchGroupLag(groupId: string): Promise<GroupLag[]> {
    const r = await this.get<{ data: Json[] }>(`/consumer-groups/${enc(groupId)}/lags`);
    return r.data.map((l) => ({
      topic: String(l.topic_name), partition: Number(l.partition_id), currentOffset: (l.current_offset as number | null) ?? null,
      logEndOffset: Number(l.log_end_offset), lastStableOffset: Number(l.last_stable_offset ?? l.log_end_offset), lag: Number(l.lag),
      memberId: (l.consumer_id as string | null) ?? null,
    }));
  }

  /** Moves a group's offsets for `topic` (or `partitions`) to the earliest or latest offset, as kafkajs's `resetOffsets`. */
  resetOffsets(o: { groupId: string; topic: string; earliest?: boolean }): Promise<{ topic: string; partition: number; offset: string }[]> {
    return this.resetOffsetsTo({ groupId: o.groupId, topics: [o.topic], to: o.earliest ? 'earliest' : 'latest' });
  }

  /** Sets a group's committed offsets per partition (kafkajs's `setOffsets`). The group must have no live members. */
  async setOffsets(o: { groupId: string; topic: string; partitions: { partition: number; offset: string }[] }): Promise<void> {
    for (const p of o.partitions) await this.resetOffsetsTo({ groupId: o.groupId, partitions: [{ topic: o.topic, partition: p.partition }], to: { offset: Number(p.offset) } });
  }

  /** Any of the server's resets: earliest, latest, an offset, a timestamp or a shift, for topics or partitions. */
  async resetOffsetsTo(o: { groupId: string; topics?: string[]; partitions?: { topic: string; partition: number }[]; to: ResetTo }): Promise<{ topic: string; partition: number; offset: string }[]> {
    const to = typeof o.to === 'string' ? o.to : 'shiftBy' in o.to ? { shift_by: o.to.shiftBy } : o.to;
    const r = await this.send<{ data: Json[] }>('POST', `/consumer-groups/${enc(o.groupId)}/offsets:reset`, {
      ...(o.topics ? { topics: o.topics } : {}), ...(o.partitions ? { partitions: o.partitions } : {}), to,
    });
    return r.data.map((x) => ({ topic: String(x.topic_name), partition: Number(x.partition_id), offset: String(x.offset) }));
  }

  async deleteGroups(groupIds: string[]): Promise<void> {
    for (const g of groupIds) await this.send('DELETE', `/consumer-groups/${enc(g)}`);
  }

  // --- ACLs -------------------------------------------------------------------------------------
  // Enums are kafkajs's numbers (AclResourceTypes, ResourcePatternTypes, AclOperationTypes,
  // AclPermissionTypes) or Kafka's names as strings; answers carry the numbers.

  /** Creates ACLs (idempotent), all or none: one invalid entry fails the call and stores nothing. */
  async createAcls(o: { acl: AclEntry[] }): Promise<boolean> {
    await this.send('POST', '/acls:batch', { data: o.acl.map(entryJson) });
    return true;
  }

  /** The ACLs a filter matches, grouped by resource pattern as kafkajs's describeAcls answers. */
  async describeAcls(filter: AclFilter = {}): Promise<{ throttleTime: number; errorCode: number; errorMessage: string | null; resources: ReturnType<typeof groupByResource> }> {
    const r = await this.get<{ data: Json[] }>('/acls', filterQuery(filter));
    return { throttleTime: 0, errorCode: 0, errorMessage: null, resources: groupByResource(r.data.map(aclDescription)) };
  }

  /** Deletes what each filter matches; per filter, the ACLs it deleted. */
  async deleteAcls(o: { filters: AclFilter[] }): Promise<{ throttleTime: number; filterResponses: { errorCode: number; errorMessage: string | null; matchingAcls: (AclDescription & { errorCode: number; errorMessage: string | null })[] }[] }> {
    const filterResponses = [];
    for (const f of o.filters) {
      const r = await this.conn.transport.call<{ data: Json[] }>('DELETE', await this.conn.v3('/acls'), { query: filterQuery(f) });
      filterResponses.push({ errorCode: 0, errorMessage: null, matchingAcls: r.body.data.map((d) => ({ ...aclDescription(d), errorCode: 0, errorMessage: null })) });
    }
    return { throttleTime: 0, filterResponses };
  }

  // --- transactions -----------------------------------------------------------------------------
  // Kafka's Admin names (KIP-664); not in kafkajs.

  /** Every transactional id the caller may DESCRIBE (Kafka's ListTransactions), or only those in `states`. */
  listTransactions(o: ListTransactionsOptions = {}): Promise<{ transactions: TransactionDescription[] }> {
    return listTransactions(this.conn, o);
  }

  /** Each id's producer, state and open transaction (Kafka's DescribeTransactions); TRANSACTIONAL_ID_NOT_FOUND for an unknown id. */
  describeTransactions(transactionalIds: string[]): Promise<{ transactions: TransactionDescription[] }> {
    return describeTransactions(this.conn, transactionalIds);
  }

  /**
   * Aborts the id's open transaction and fences its producer (kafka-transactions.sh abort): a
   * hanging transaction stops holding back read_committed readers. Needs CLUSTER ALTER.
   */
  abortTransaction(transactionalId: string): Promise<TransactionDescription> {
    return abortTransaction(this.conn, transactionalId);
  }

  /** Each partition's producers, and whether the transaction one has open hangs (Kafka's DescribeProducers). Needs TOPIC READ. */
  describeProducers(partitions: { topic: string; partition: number }[]): Promise<{ topic: string; partition: number; producers: ProducerStateDescription[] }[]> {
    return describeProducers(this.conn, partitions);
  }

  /**
   * Ends a partition's hanging transactions (kafka-transactions.sh abort --topic --partition):
   * each with the marker its coordinator decided; only the one at `startOffset` or of
   * `producerId` when given. Needs CLUSTER ALTER.
   */
  endHangingTransactions(o: { topic: string; partition: number; producerId?: number; startOffset?: number }): Promise<EndedHangingTransaction[]> {
    return endHangingTransactions(this.conn, o);
  }

  // --- push subscriptions -----------------------------------------------------------------------
  // Tributary's: the cluster reads a topic as a group and posts its records to an endpoint.

  /** Creates a push subscription; resolves with it and the secret that signs its deliveries (answered only here). */
  createSubscription(o: CreateSubscriptionOptions): Promise<CreatedSubscription> {
    return createSubscription(this.conn, o);
  }

  /** Every push subscription. */
  listSubscriptions(): Promise<SubscriptionDescription[]> {
    return listSubscriptions(this.conn);
  }

  /** A push subscription and each partition's delivery state; an unknown name rejects at once (404). */
  describeSubscription(name: string): Promise<SubscriptionDetails> {
    return describeSubscription(this.conn, name);
  }

  /** Deletes a push subscription: its deliveries stop. */
  deleteSubscription(name: string): Promise<void> {
    return deleteSubscription(this.conn, name);
  }

  // --- client quotas ----------------------------------------------------------------------------

  /**
   * Client quotas per principal (Kafka's DescribeClientQuotas for user entities): every principal
   * with quotas, or only those named (`<default>` is the default entity). Unset keys are absent.
   */
  async describeClientQuotas(o: { principals?: string[] } = {}): Promise<{ entries: ClientQuotaEntry[] }> {
    const r = await this.get<{ data?: Json[] }>('/client-quotas');
    const entries = (r.data ?? []).map((q) => ({
      principal: String(q.principal),
      quotas: Object.fromEntries(QUOTA_KEYS.filter((k) => typeof q[k] === 'number').map((k) => [k, q[k] as number])) as ClientQuotas,
    }));
    return { entries: o.principals ? entries.filter((e) => o.principals?.includes(e.principal)) : entries };
  }

  /**
   * Sets (replacing all its keys) or, with `quotas: null`, removes each principal's quotas
   * (Kafka's AlterClientQuotas). Removing quotas a principal does not have fails with 40403.
   */
  async alterClientQuotas(o: { entries: { principal: string; quotas: ClientQuotas | null }[] }): Promise<void> {
    for (const e of o.entries) {
      if (e.quotas === null) await this.send('DELETE', `/client-quotas/${enc(e.principal)}`);
      else await this.send('PUT', `/client-quotas/${enc(e.principal)}`, e.quotas);
    }
  }

  // --- cluster ----------------------------------------------------------------------------------

  /**
   * Brokers, the controller and the cluster id. Tributary's controller is a lease holder, not a
   * broker: `controller` is its id (a string such as `controller-1`), a broker id where the
   * server names one, or null when no controller holds the lease.
   */
  async describeCluster(): Promise<{ brokers: BrokerDescription[]; controller: string | number | null; clusterId: string }> {
    const clusterId = await this.conn.clusterId();
    const [brokers, cluster] = await Promise.all([this.get<{ data: Json[] }>('/brokers'), this.get('')]);
    return {
      clusterId,
      controller: await this.controllerOf(cluster.controller),
      brokers: brokers.data.map((b) => ({
        nodeId: Number(b.broker_id), host: (b.host as string | null) ?? null, port: (b.port as number | null) ?? null, rack: (b.rack as string | null) ?? null,
        ...(b.state !== undefined ? { state: String(b.state) } : {}),
        ...(typeof b.replica_count === 'number' ? { replicaCount: b.replica_count } : {}),
        ...(typeof b.leader_count === 'number' ? { leaderCount: b.leader_count } : {}),
        ...(b.bytes !== undefined ? { bytes: b.bytes as number | null } : {}),
      })),
    };
  }

  /**
   * The metadata view (`GET /v3/clusters/{c}/metadata`): brokers, the controller lease, and every
   * topic's partitions with leader, leader epoch, replicas and ISR, in one request. Tributary's;
   * `metadataVersion` changes with every metadata change.
   */
  async describeMetadata(): Promise<ClusterMetadata> {
    return clusterMetadata(await this.describe('/metadata'), await this.conn.clusterId());
  }

  /** The controller lease (`GET …/controller`): holder, epoch and expiry; all null while nobody holds it. Tributary's. */
  async describeController(): Promise<ControllerDescription> {
    return controllerDescription(await this.describe('/controller'));
  }

  /**
   * A topic's partitions with every replica's state, log start and end offsets and lag, and the
   * leader's log start, log end and high watermark — one request (the partition list carries them).
   * A topic that does not exist is a `TributaryProtocolError` of type UNKNOWN_TOPIC_OR_PARTITION
   * (status 404), at once.
   */
  async describePartitions(topic: string): Promise<PartitionDescription[]> {
    const r = await this.describe<{ data?: Json[] }>(`/topics/${enc(topic)}/partitions`);
    return (r.data ?? []).map(partitionDescription).sort((a, b) => a.partitionId - b.partitionId);
  }

  /**
   * A partition's S3 segments in base offset order (docs/tiered-log.md): `live` ones by default,
   * or those in one `state`, or `all`. `endOffset` is exclusive. Tributary's.
   */
  async describeSegments(topic: string, partition: number, o: { state?: 'live' | 'pending' | 'deleted' | 'all' } = {}): Promise<SegmentDescription[]> {
    return (await this.describeLogTiers(topic, partition, o)).segments;
  }

  /**
   * A partition's segments and where its tiers meet: [logStartOffset, localLogStartOffset) is in
   * S3, the rest in the replica tables. Reads every page of the segment list. Tributary's.
   */
  async describeLogTiers(topic: string, partition: number, o: { state?: 'live' | 'pending' | 'deleted' | 'all' } = {}): Promise<LogTiers> {
    const path = `/topics/${enc(topic)}/partitions/${partition}/segments`;
    const first = await this.describe<Json>(path, o.state ? { state: o.state } : undefined);
    const segments = (first.data as Json[] | undefined ?? []).map(segmentDescription);
    // Each page asks from the base offset the last one named (`metadata.next`), so it always moves on.
    for (let from = nextFromOffset(first); from !== null;) {
      const page = await this.describe<Json>(path, { ...(o.state ? { state: o.state } : {}), from_offset: from });
      segments.push(...(page.data as Json[] | undefined ?? []).map(segmentDescription));
      const next = nextFromOffset(page);
      from = next !== null && next > from ? next : null;
    }
    return { ...tierBounds(first), segments };
  }

  /**
   * Reads a partition without a consumer group (a message browser): from `offset`, else from the
   * first record at or after `timestamp` (Kafka's ListOffsets by time), else from the log start.
   * Answers at once (no long poll): an empty `messages` at the high watermark. A time later than
   * every record answers empty at the high watermark. An offset outside the log is a
   * `TributaryProtocolError` of type OFFSET_OUT_OF_RANGE.
   */
  async fetchMessages(o: FetchMessagesOptions): Promise<FetchResult> {
    let offset = o.offset;
    if (offset === undefined) {
      const spec = o.timestamp === undefined ? 'earliest' : typeof o.timestamp === 'number' ? o.timestamp : Date.parse(o.timestamp);
      if (typeof spec === 'number' && !Number.isFinite(spec)) throw new TributaryError(`fetchMessages: timestamp must be epoch milliseconds or an ISO-8601 date-time, got '${String(o.timestamp)}'.`);
      const found = await this.conn.listOffset(o.topic, o.partition, spec);
      if (spec !== 'earliest' && found.offset === null) return { messages: [], nextOffset: found.high, highWatermark: found.high, logStartOffset: found.low };
      offset = spec === 'earliest' ? found.low : (found.offset as number);
    }
    return this.conn.fetch(o.topic, o.partition, offset, { maxWaitMs: 0, ...(o.maxBytes !== undefined ? { maxBytes: o.maxBytes } : {}), ...(o.signal ? { signal: o.signal } : {}) });
  }

  /** The controller, whether the cluster shows it inline or as a `{related}` link. */
  private async controllerOf(c: unknown): Promise<string | number | null> {
    if (c === null || c === undefined || typeof c !== 'object') return typeof c === 'string' || typeof c === 'number' ? c : null;
    const o = c as Json;
    if (typeof o.related === 'string') {
      try {
        const linked = (await this.conn.transport.call<Json>('GET', o.related)).body;
        return (linked.broker_id as number | undefined) ?? (linked.controller_id as string | undefined) ?? null;
      } catch (e) {
        if (e instanceof TributaryProtocolError && e.status === 404) return null;
        throw e;
      }
    }
    return (o.controller_id as string | undefined) ?? (o.broker_id as number | undefined) ?? null;
  }
}

function configPath(r: { type: number; name: string }): string {
  if (r.type === ConfigResourceTypes.TOPIC) return `/topics/${enc(r.name)}/configs`;
  if (r.type === ConfigResourceTypes.BROKER) return '/broker-configs';
  throw new TributaryError(`Config resource type ${r.type} is not supported; use ConfigResourceTypes.TOPIC or BROKER.`);
}

/** A v3 partition, whatever shape its leader and replicas take (a number, an object, or a link). */
function partitionMetadata(p: Json): PartitionMetadata {
  const leader = typeof p.leader_id === 'number' ? p.leader_id
    : typeof p.leader === 'number' ? p.leader
      : typeof (p.leader as Json | null)?.related === 'string' ? Number(/\/brokers\/(\d+)/.exec((p.leader as Json).related as string)?.[1] ?? -1) : -1;
  const replicas = ids(p.replicas);
  const isr = ids(p.isr);
  return {
    partitionId: Number(p.partition_id), leader, ...(typeof p.leader_epoch === 'number' ? { leaderEpoch: p.leader_epoch } : {}),
    replicas: replicas.length > 0 ? replicas : isr, isr, offlineReplicas: [], partitionErrorCode: leader < 0 ? 5 : 0,
  };
}
