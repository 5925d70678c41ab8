/**
 * The shapes of what the stores hold (docs/architecture.md, "Components"). Plain data: no
 * behaviour, no SDK types.
 */

export interface ClusterRecord {
  readonly clusterId: string;
  /** Bumped by every metadata change; a cache whose version differs is stale. */
  readonly metadataVersion: number;
  readonly createdAt: string;
}

export type BrokerState = 'alive' | 'fenced';

export interface BrokerRecord {
  readonly brokerId: number;
  /** The broker's replica table. */
  readonly replicaTable: string;
  /** DynamoDB endpoint of the replica table when it is not the default one (the local stack). */
  readonly endpoint?: string;
  readonly rack: string | null;
  readonly state: BrokerState;
  /**
   * Set by a request to remove the broker (DELETE .../brokers/{id}): the balancer moves every
   * replica off it, then the controller deregisters it. Liveness (`state`) is judged as for any broker.
   */
  readonly decommissioning?: boolean;
  readonly lastSeenAt?: number;
  /**
   * The incarnation of its store's contents, as the controller last accounted for them. A store
   * that answers with another (or none) lost its data: the broker is treated as having failed.
   */
  readonly incarnation?: string;
  /**
   * Incarnations a controller recorded (under its lease) before writing one to the store, and
   * may still write, late: until a write completes the store may hold any of them, and that is
   * no loss. Cleared when the record's `incarnation` is set.
   */
  readonly pendingIncarnations?: readonly string[];
}

export type TopicState = 'creating' | 'active';

export interface TopicRecord {
  readonly name: string;
  readonly topicId: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Only the configs set on the topic; defaults live in lib/cluster/topic-configs.ts. */
  readonly configs: Readonly<Record<string, string>>;
  readonly createdAt: string;
  readonly state: TopicState;
}

export interface PartitionRecord {
  readonly topicId: string;
  readonly partition: number;
  /** Broker id of the leader, or -1 while the partition is offline. */
  readonly leader: number;
  readonly leaderEpoch: number;
  /** Ordered; the first is the preferred leader. */
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  /** Bumped on every change; every change is a compare-and-set on it. */
  readonly partitionEpoch: number;
  /**
   * While a reassignment moves the partition (Kafka's AlterPartitionReassignments,
   * lib/cluster/reassignment.ts): the replicas being added. `replicas` then holds the target
   * replicas followed by `removingReplicas`.
   */
  readonly addingReplicas?: readonly number[];
  /** While a reassignment moves the partition: the replicas that leave it once every adding one is in the ISR. */
  readonly removingReplicas?: readonly number[];
  /** Brokers that left the replicas by a move and still hold its data: deleted by the controller's next walk. */
  readonly purging?: readonly number[];
}

export type ReplicaRole = 'leader' | 'follower';

/** The head item (`off = -1`) of one partition in one replica table. */
export interface ReplicaHead {
  readonly tp: string;
  /** Log end offset: the offset the next record gets. */
  readonly leo: number;
  /** High watermark: records below it are committed and visible to consumers. */
  readonly hw: number;
  readonly logStartOffset: number;
  /**
   * The first offset this replica's table holds (absent: `logStartOffset`); [logStartOffset,
   * tailStart) is in the partition's live S3 segments (lib/storage/coordination/segments.ts). Never moves back.
   */
  readonly tailStart?: number;
  /** Bytes of batches in the table at and above `tailStart` (a roll's trigger; an estimate after a truncation). */
  readonly tailBytes?: number;
  /** When the oldest batch now in the table was appended (ms since epoch; a roll's `segment.ms` trigger). */
  readonly tailSince?: number;
  readonly leaderEpoch: number;
  readonly role: ReplicaRole;
  /** Leader-epoch cache: `[epoch, startOffset]` pairs in increasing order (KIP-101). */
  readonly epochs: readonly (readonly [number, number])[];
  /**
   * The leader epoch this replica last reconciled its log with (truncation after an epoch change,
   * KIP-101). A follower copies only while `syncEpoch === leaderEpoch`.
   */
  readonly syncEpoch: number;
  /** While a full sync (snapshot replay) fills this replica: when it began (ms since epoch). */
  readonly snapshotting?: number;
  /** While a full sync runs: when its claimant last showed it is alive (0: it gave up). */
  readonly snapshotRenewedAt?: number;
  /** On a leader: what it last learned of each follower (broker id → log end offset, time it was last caught up). */
  readonly followers: Readonly<Record<string, FollowerProgress>>;
  /**
   * On a leader: the ISR it counts for `min.insync.replicas` — never more than the partition
   * state's ISR (a follower joins there before it joins here, and leaves here before it leaves
   * there), so an append the ISR is too small for is refused as soon as the ISR says so.
   * The high watermark counts `isr`, `joining` and `leaving` together: always a superset of the
   * partition state's ISR, so a member the controller may elect holds everything below it.
   */
  readonly isr: readonly number[];
  /** On a leader: followers being added to the ISR (counted for the high watermark already, not yet for `min.insync.replicas`). */
  readonly joining: readonly number[];
  /**
   * On a leader: when each follower in `joining` began to join (broker id → ms). A joiner lives no
   * longer than its function; an entry far older was left by one that died, and `replicate`
   * settles it. Absent for entries written before it was kept: those count as old.
   */
  readonly joiningSince?: Readonly<Record<string, number>>;
  /** On a leader: followers being removed from the ISR (no longer counted for `min.insync.replicas`, still for the high watermark). */
  readonly leaving: readonly number[];
  /** On a leader: bumped by every change of `isr`, `joining` or `leaving`; high watermark writes are conditioned on it. */
  readonly isrVersion: number;
  /** A new value on every truncation or full sync: a truncation is conditioned on the one it read, so no two apply to one log. */
  readonly logId?: string;
  /**
   * On a leader: the leader epoch under which it put this partition in the coordination table's
   * lag index (absent, or another epoch: it did not), so only a change of lagging costs a write.
   */
  readonly lagMarkedEpoch?: number;
  /**
   * On a leader: how many times a sweep has cleared the lag flag (absent: never). A write that sets
   * the flag is conditioned on the count it read, so it cannot land on a clear it did not see.
   */
  readonly lagClears?: number;
  /**
   * On a leader: when a group commit last took the batches of more than one writer (epoch ms).
   * While it is recent, appends go to the stage instead of racing the committer for the head.
   */
  readonly combinedAt?: number;
  /** On a leader: how many group-commit rounds it committed (lib/storage/replica/rounds.ts; absent: none). */
  readonly round?: number;
  /** On a leader: the last round whose staged objects are all deleted (absent: none). */
  readonly clean?: number;
  /**
   * Transactions not yet stable on this replica's log, each → its first offset: open ones under
   * their producer id, and ones a marker closed under `producerId:markerOffset` until the high
   * watermark passes the marker (entries it has passed are stable and dropped at the next change).
   * The last stable offset is the least first offset of the unstable ones and the high watermark.
   */
  readonly openTxns?: Readonly<Record<string, number>>;
}

/** The first offset of the first transaction not yet stable (Kafka's first unstable offset); Infinity when none. */
export function firstUnstableOffset(h: Pick<ReplicaHead, 'hw' | 'openTxns'>): number {
  let first = Infinity;
  for (const [key, offset] of Object.entries(h.openTxns ?? {})) {
    const at = key.indexOf(':');
    if (at >= 0 && Number(key.slice(at + 1)) < h.hw) continue; // closed, its marker below the high watermark
    first = Math.min(first, offset);
  }
  return first;
}

/** The last stable offset (Kafka's LSO): read_committed readers read below it. */
export const lastStableOffset = (h: Pick<ReplicaHead, 'hw' | 'openTxns'>): number => Math.min(h.hw, firstUnstableOffset(h));

export interface FollowerProgress {
  readonly leo: number;
  /** When the follower last held everything the leader had (ms since epoch). */
  readonly caughtUpAt: number;
}

/** Where every key of the group commit's stage starts (lib/storage/stage.ts; the CDK's lifecycle rule expires what is under it). */
export const STAGE_ROOT = 'stage/';
/** Days after which the stage bucket's lifecycle rule expires an object left under STAGE_ROOT (the local stack emulates the rule). */
export const STAGE_EXPIRATION_DAYS = 1;

/** Where a batch's bytes live when they are too large to keep inline. */
export interface S3Pointer {
  readonly key: string;
  readonly position: number;
  readonly length: number;
}

/** One record batch in a replica table, keyed by its last offset. */
export interface BatchRecord {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly leaderEpoch: number;
  readonly maxTimestamp: number;
  readonly recordCount: number;
  readonly sizeBytes: number;
  /** The RecordBatch v2 bytes, when inline. */
  readonly data?: Uint8Array;
  /** The RecordBatch v2 bytes' location in S3, when not inline. */
  readonly s3?: S3Pointer;
  /** Idempotent producer fields, copied from the batch header (absent when producerId = -1). */
  readonly producerId?: number;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
  /** A transactional producer's batch (the header's transactional bit). */
  readonly transactional?: boolean;
  /** A transaction marker (a control batch): which kind. */
  readonly control?: 'commit' | 'abort';
  /**
   * When DynamoDB's TTL may delete the batch's item (seconds since the epoch, the replica tables'
   * `expiresAt`): set at the append, copied with the batch, far enough out that the batch is rolled
   * into a segment first. Below the tail start nothing reads it, so no trim deletes it.
   */
  readonly expiresAt?: number;
}

export const topicPartitionKey = (topicId: string, partition: number): string => `${topicId}#${partition}`;

/** Idempotent producer state of one producer on one replica (lib/log/producer-state.ts decides with it). */
export interface StoredProducerState {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** `[firstSeq, lastSeq, baseOffset, lastOffset]` of the most recent batches, oldest first. */
  readonly batches: readonly { readonly firstSeq: number; readonly lastSeq: number; readonly baseOffset: number; readonly lastOffset: number }[];
  /** Transactions (lib/log/producer-state.ts): the open transaction's first offset, the last marker's epoch, the last transaction a marker closed. */
  readonly txnFirst?: number;
  readonly markerEpoch?: number;
  readonly closed?: { readonly first: number; readonly marker: number };
  /** Bumped on every write: the compare-and-set token. */
  readonly ver: number;
}

/** The controller lease: who holds it, under which epoch, until when (ms since epoch, holder's clock). */
export interface Lease {
  readonly holder: string;
  readonly epoch: number;
  readonly expiresAt: number;
}
