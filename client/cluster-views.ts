/**
 * Tributary's own views of the cluster, as the admin client returns them (for consoles and
 * operators): the metadata view, the controller lease, partitions with every replica's offsets,
 * and a partition's S3 segments. camelCase shapes read tolerantly from the v3 answers: an absent
 * or mistyped field becomes null (or an empty list), never an exception.
 */

type Json = Record<string, unknown>;

/** The controller lease: who holds it, its epoch, when it expires (ISO-8601). All null while no controller holds it. */
export interface ControllerDescription {
  readonly controllerId: string | null;
  readonly epoch: number | null;
  readonly leaseExpiresAt: string | null;
}

/** One partition in the metadata view. */
export interface MetadataPartition {
  readonly partitionId: number;
  /** The leader's broker id; -1 while the partition has none (offline), as kafkajs's `PartitionMetadata`. */
  readonly leader: number;
  readonly leaderEpoch: number | null;
  readonly replicas: number[];
  readonly isr: number[];
}

/** `GET /v3/clusters/{c}/metadata`: what a client that routes itself needs, in one answer. */
export interface ClusterMetadata {
  readonly clusterId: string;
  /** Bumped by every metadata change: watch it to know when to read again. */
  readonly metadataVersion: number | null;
  /** Null while no controller holds the lease. */
  readonly controller: ControllerDescription | null;
  readonly brokers: { brokerId: number; rack: string | null; state: string | null }[];
  /** Only the topics the caller may DESCRIBE. */
  readonly topics: { name: string; topicId: string | null; partitions: MetadataPartition[] }[];
}

/** One replica of a partition: its state and offsets, as its own store reports them (null: the store did not answer). */
export interface ReplicaStateDescription {
  readonly brokerId: number;
  readonly isLeader: boolean;
  readonly isInSync: boolean;
  /** `in-sync`, `catching-up`, `snapshotting` (a full copy in progress) or `unavailable`. */
  readonly state: string;
  readonly logStartOffset: number | null;
  readonly logEndOffset: number | null;
  /** Records behind the leader's log end offset. */
  readonly lag: number | null;
}

/** A partition with every replica's state; the offsets are the leader's (null when it did not answer). */
export interface PartitionDescription {
  readonly partitionId: number;
  /** The leader's broker id; -1 while the partition has none (offline), as kafkajs's `PartitionMetadata`. */
  readonly leader: number;
  readonly leaderEpoch: number | null;
  readonly isr: number[];
  readonly replicas: number[];
  readonly replicaStates: ReplicaStateDescription[];
  readonly logStartOffset: number | null;
  readonly logEndOffset: number | null;
  readonly highWatermark: number | null;
  /** Where a read_committed reader stops: the high watermark, or the first offset of a transaction open on the partition. */
  readonly lastStableOffset: number | null;
}

/** One S3 segment of a partition's log (docs/tiered-log.md). Times are ISO-8601. */
export interface SegmentDescription {
  readonly topic: string;
  readonly partition: number;
  /** First offset of the segment's first batch. */
  readonly baseOffset: number;
  /** Exclusive: the last batch's last offset + 1 (the next segment's base offset). */
  readonly endOffset: number;
  /** Null while the segment is `pending` (its object is being written). */
  readonly sizeBytes: number | null;
  readonly recordCount: number | null;
  readonly batchCount: number | null;
  readonly minTimestamp: string | null;
  readonly maxTimestamp: string | null;
  /** `live` (part of the log), `pending` or `deleted` (awaiting the garbage pass). */
  readonly state: string;
  /** 0 for a roll's object; a compaction's rewrite of the range has a higher one. */
  readonly generation: number;
  /** The S3 object's key. */
  readonly objectKey: string;
  readonly createdAt: string | null;
  readonly deletedAt: string | null;
}

/**
 * A partition's tiers: its segments and where the tiers meet, from the leader's head (null when
 * the leader did not answer). [logStartOffset, localLogStartOffset) is in S3 segments;
 * [localLogStartOffset, logEndOffset) in the replica tables.
 */
export interface LogTiers {
  readonly logStartOffset: number | null;
  /** Kafka's name in tiered storage (KIP-405): the first offset the replica tables hold. */
  readonly localLogStartOffset: number | null;
  readonly highWatermark: number | null;
  readonly logEndOffset: number | null;
  readonly segments: SegmentDescription[];
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => x !== null && typeof x === 'object') : []);
/** Broker ids, whether numbers or `{broker_id}` objects. */
const ids = (v: unknown): number[] => (Array.isArray(v) ? v.map((x) => (typeof x === 'number' ? x : Number((x as Json | null)?.broker_id))).filter(Number.isFinite) : []);
/** A leader id from a `leader_id`, a number, or a `{related: …/brokers/N}` link; -1 for none. */
function leaderOf(p: Json): number {
  const id = num(p.leader_id) ?? num(p.leader);
  if (id !== null) return id >= 0 ? id : -1;
  const link = str((p.leader as Json | null | undefined)?.related);
  const m = link ? /\/brokers\/(\d+)$/.exec(link) : null;
  return m ? Number(m[1]) : -1;
}

export function controllerDescription(c: unknown): ControllerDescription {
  const o = (c && typeof c === 'object' ? c : {}) as Json;
  const id = o.controller_id;
  return { controllerId: typeof id === 'string' || typeof id === 'number' ? String(id) : null, epoch: num(o.epoch), leaseExpiresAt: str(o.lease_expires_at) };
}

export function clusterMetadata(m: Json, clusterId: string): ClusterMetadata {
  const controller = m.controller && typeof m.controller === 'object' ? controllerDescription(m.controller) : null;
  return {
    clusterId: str(m.cluster_id) ?? clusterId,
    metadataVersion: num(m.metadata_version),
    controller: controller && controller.controllerId !== null ? controller : null,
    brokers: arr(m.brokers).map((b) => ({ brokerId: Number(b.broker_id), rack: str(b.rack), state: str(b.state) })),
    topics: arr(m.topics).map((t) => ({
      name: String(t.topic_name),
      topicId: str(t.topic_id),
      partitions: arr(t.partitions).map((p) => ({
        partitionId: Number(p.partition_id), leader: leaderOf(p), leaderEpoch: num(p.leader_epoch), replicas: ids(p.replicas), isr: ids(p.isr),
      })),
    })),
  };
}

export function partitionDescription(p: Json): PartitionDescription {
  const replicaStates = arr(p.replica_states).map((r): ReplicaStateDescription => ({
    brokerId: Number(r.broker_id), isLeader: r.is_leader === true, isInSync: r.is_in_sync === true, state: str(r.state) ?? 'unavailable',
    logStartOffset: num(r.log_start_offset), logEndOffset: num(r.log_end_offset), lag: num(r.lag),
  }));
  // `replicas` is a relationship in the v3 shape: the replica states name them.
  const replicas = ids(p.replicas);
  return {
    partitionId: Number(p.partition_id), leader: leaderOf(p), leaderEpoch: num(p.leader_epoch), isr: ids(p.isr),
    replicas: replicas.length > 0 ? replicas : replicaStates.map((r) => r.brokerId),
    replicaStates, logStartOffset: num(p.log_start_offset), logEndOffset: num(p.log_end_offset), highWatermark: num(p.high_watermark),
    lastStableOffset: num(p.last_stable_offset),
  };
}

export function segmentDescription(s: Json): SegmentDescription {
  return {
    topic: String(s.topic_name), partition: Number(s.partition_id), baseOffset: Number(s.base_offset), endOffset: Number(s.end_offset),
    sizeBytes: num(s.size_bytes), recordCount: num(s.record_count), batchCount: num(s.batch_count),
    minTimestamp: str(s.min_timestamp), maxTimestamp: str(s.max_timestamp), state: str(s.state) ?? 'live', generation: num(s.generation) ?? 0,
    objectKey: String(s.object_key ?? ''), createdAt: str(s.created_at), deletedAt: str(s.deleted_at),
  };
}

/** The tiers' bounds of a segment list answer (its first page's). */
export const tierBounds = (r: Json): Omit<LogTiers, 'segments'> => ({
  logStartOffset: num(r.log_start_offset), localLogStartOffset: num(r.local_log_start_offset), highWatermark: num(r.high_watermark), logEndOffset: num(r.log_end_offset),
});

/** The `from_offset` of a list's `metadata.next` link; null when it is the last page. */
export function nextFromOffset(r: Json): number | null {
  const next = str((r.metadata as Json | undefined)?.next);
  const m = next ? /[?&]from_offset=(\d+)/.exec(next) : null;
  return m ? Number(m[1]) : null;
}
