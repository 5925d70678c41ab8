/**
 * Kafka's wire error codes as one table (kafka/common/protocol/Errors.java): name, code, whether a
 * client may retry, and how the HTTP API reports each one (status and Confluent REST Proxy error code);
 * and `KafkaError`, the error that carries one of them — the base every domain failure uses, from the
 * codec up (lib/errors.ts adds the HTTP-only errors and the mapping of store failures).
 */

export interface KafkaErrorSpec {
  readonly code: number;
  readonly retriable: boolean;
  /** HTTP status the API answers with. */
  readonly status: number;
  /** REST Proxy `error_code` (its five-digit codes where it has one, else the HTTP status). */
  readonly restCode: number;
  readonly message: string;
}

const spec = (code: number, retriable: boolean, status: number, restCode: number, message: string): KafkaErrorSpec =>
  ({ code, retriable, status, restCode, message });

export const KAFKA_ERRORS = {
  UNKNOWN_SERVER_ERROR: spec(-1, false, 500, 50002, 'The server experienced an unexpected error when processing the request.'),
  OFFSET_OUT_OF_RANGE: spec(1, false, 416, 41601, 'The requested offset is not within the range of offsets maintained by the server.'),
  CORRUPT_MESSAGE: spec(2, true, 400, 40002, 'This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt.'),
  UNKNOWN_TOPIC_OR_PARTITION: spec(3, true, 404, 40401, 'This server does not host this topic-partition.'),
  INVALID_FETCH_SIZE: spec(4, false, 400, 40002, 'The requested fetch size is invalid.'),
  LEADER_NOT_AVAILABLE: spec(5, true, 503, 50003, 'There is no leader for this topic-partition as we are in the middle of a leadership election.'),
  NOT_LEADER_OR_FOLLOWER: spec(6, true, 503, 50003, 'This replica is not the leader of the topic-partition.'),
  REQUEST_TIMED_OUT: spec(7, true, 504, 50003, 'The request timed out.'),
  BROKER_NOT_AVAILABLE: spec(8, true, 503, 50003, 'The broker is not available.'),
  REPLICA_NOT_AVAILABLE: spec(9, true, 503, 50003, 'The replica is not available for the requested topic-partition.'),
  MESSAGE_TOO_LARGE: spec(10, false, 413, 41301, 'The request included a message larger than the max message size the server will accept.'),
  STALE_CONTROLLER_EPOCH: spec(11, false, 409, 40901, 'The controller moved to another broker.'),
  OFFSET_METADATA_TOO_LARGE: spec(12, false, 400, 40002, 'The metadata field of the offset request was too large.'),
  INVALID_TOPIC_EXCEPTION: spec(17, false, 400, 40002, 'The request attempted to perform an operation on an invalid topic.'),
  RECORD_LIST_TOO_LARGE: spec(18, false, 413, 41301, 'The request included message batch larger than the configured segment size on the server.'),
  NOT_ENOUGH_REPLICAS: spec(19, true, 503, 50003, 'Messages are rejected since there are fewer in-sync replicas than required.'),
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: spec(20, true, 503, 50003, 'Messages are written to the log, but to fewer in-sync replicas than required.'),
  INVALID_REQUIRED_ACKS: spec(21, false, 400, 40002, 'Produce request specified an invalid value for required acks.'),
  ILLEGAL_GENERATION: spec(22, false, 409, 40901, 'Specified group generation id is not valid.'),
  INVALID_GROUP_ID: spec(24, false, 400, 40002, 'The configured groupId is invalid.'),
  UNKNOWN_MEMBER_ID: spec(25, false, 404, 40403, 'The coordinator is not aware of this member.'),
  INVALID_SESSION_TIMEOUT: spec(26, false, 400, 40002, 'The session timeout is not within the range allowed by the broker.'),
  REBALANCE_IN_PROGRESS: spec(27, false, 409, 40901, 'The group is rebalancing, so a rejoin is needed.'),
  TOPIC_AUTHORIZATION_FAILED: spec(29, false, 403, 40301, 'Topic authorization failed.'),
  GROUP_AUTHORIZATION_FAILED: spec(30, false, 403, 40301, 'Group authorization failed.'),
  CLUSTER_AUTHORIZATION_FAILED: spec(31, false, 403, 40301, 'Cluster authorization failed.'),
  INVALID_TIMESTAMP: spec(32, false, 400, 40002, 'The timestamp of the message is out of acceptable range.'),
  UNSUPPORTED_VERSION: spec(35, false, 400, 40002, 'The version of API is not supported.'),
  TOPIC_ALREADY_EXISTS: spec(36, false, 400, 40002, 'Topic with this name already exists.'),
  INVALID_PARTITIONS: spec(37, false, 400, 40002, 'Number of partitions is below 1.'),
  INVALID_REPLICATION_FACTOR: spec(38, false, 400, 40002, 'Replication factor is below 1 or larger than the number of available brokers.'),
  INVALID_REPLICA_ASSIGNMENT: spec(39, false, 400, 40002, 'Replica assignment is invalid.'),
  INVALID_CONFIG: spec(40, false, 400, 40002, 'Configuration is invalid.'),
  NOT_CONTROLLER: spec(41, true, 503, 50003, 'This is not the correct controller for this cluster.'),
  INVALID_REQUEST: spec(42, false, 400, 40002, 'This most likely occurs because of a request being malformed.'),
  POLICY_VIOLATION: spec(44, false, 400, 40002, 'Request parameters do not satisfy the configured policy.'),
  OUT_OF_ORDER_SEQUENCE_NUMBER: spec(45, false, 409, 40901, 'The broker received an out of order sequence number.'),
  DUPLICATE_SEQUENCE_NUMBER: spec(46, false, 409, 40901, 'The broker received a duplicate sequence number.'),
  INVALID_PRODUCER_EPOCH: spec(47, false, 409, 40901, 'Producer attempted to produce with an old epoch.'),
  INVALID_TXN_STATE: spec(48, false, 409, 40901, 'The producer attempted a transactional operation in an invalid state.'),
  INVALID_PRODUCER_ID_MAPPING: spec(49, false, 409, 40901, 'The producer attempted to use a producer id which is not currently assigned to its transactional id.'),
  INVALID_TRANSACTION_TIMEOUT: spec(50, false, 400, 40002, 'The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).'),
  CONCURRENT_TRANSACTIONS: spec(51, true, 409, 40901, 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.'),
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: spec(53, false, 403, 40301, 'Transactional Id authorization failed.'),
  KAFKA_STORAGE_ERROR: spec(56, true, 503, 50003, 'Disk error when trying to access log file on the disk.'),
  REASSIGNMENT_IN_PROGRESS: spec(60, false, 409, 40901, 'A partition reassignment is in progress.'),
  UNKNOWN_PRODUCER_ID: spec(59, false, 409, 40901, 'This exception is raised by the broker if it could not locate the producer metadata.'),
  NON_EMPTY_GROUP: spec(68, false, 409, 40901, 'The group is not empty.'),
  GROUP_ID_NOT_FOUND: spec(69, false, 404, 40405, 'The group id does not exist.'),
  FENCED_LEADER_EPOCH: spec(74, true, 503, 50003, 'The leader epoch in the request is older than the epoch on the broker.'),
  UNKNOWN_LEADER_EPOCH: spec(75, true, 503, 50003, 'The leader epoch in the request is newer than the epoch on the broker.'),
  OFFSET_NOT_AVAILABLE: spec(78, true, 503, 50003, 'The leader high watermark has not caught up from a recent leader election.'),
  PREFERRED_LEADER_NOT_AVAILABLE: spec(80, true, 503, 50003, 'The preferred leader was not available.'),
  ELIGIBLE_LEADERS_NOT_AVAILABLE: spec(83, true, 503, 50003, 'Eligible topic partition leaders are not available.'),
  ELECTION_NOT_NEEDED: spec(84, false, 400, 40002, 'Leader election not needed for topic partition.'),
  NO_REASSIGNMENT_IN_PROGRESS: spec(85, false, 404, 404, 'No partition reassignment is in progress.'),
  INVALID_RECORD: spec(87, false, 422, 42206, 'This record has failed the validation on broker and hence will be rejected.'),
  UNKNOWN_TOPIC_ID: spec(100, true, 404, 40401, 'This server does not host this topic ID.'),
  UNSTABLE_OFFSET_COMMIT: spec(88, true, 409, 40901, 'There are unstable offsets that need to be cleared.'),
  PRODUCER_FENCED: spec(90, false, 409, 40901, 'There is a newer producer with the same transactionalId which fences the current one.'),
  TRANSACTIONAL_ID_NOT_FOUND: spec(105, false, 404, 404, 'The transactionalId could not be found.'),
  FENCED_MEMBER_EPOCH: spec(110, false, 409, 40901, 'The member epoch is fenced by the group coordinator.'),
  STALE_MEMBER_EPOCH: spec(113, false, 409, 40901, 'The member epoch is stale.'),
} as const satisfies Record<string, KafkaErrorSpec>;

export type KafkaErrorName = keyof typeof KAFKA_ERRORS;

/** A failure named after one of Kafka's error codes; `retriable` says whether a client may try again. */
export class KafkaError extends Error {
  override readonly name = 'KafkaError';
  constructor(
    readonly kafkaName: KafkaErrorName,
    message?: string,
    /** Where it happened: topic, partition, offsets... (logged, and shown in the message by callers). */
    readonly context: Record<string, unknown> = {},
  ) {
    super(message ?? KAFKA_ERRORS[kafkaName].message);
  }
  get code(): number { return KAFKA_ERRORS[this.kafkaName].code; }
  get retriable(): boolean { return KAFKA_ERRORS[this.kafkaName].retriable; }
}

/** REST Proxy's error code for a Kafka error (40402 for a missing partition, 40401 for a missing topic). */
export function restErrorCode(k: KafkaError): number {
  return k.kafkaName === 'UNKNOWN_TOPIC_OR_PARTITION' && k.context.partition !== undefined ? 40402 : KAFKA_ERRORS[k.kafkaName].restCode;
}

/** The message with the Kafka error name in front. */
export const kafkaMessage = (k: KafkaError): string => (k.message.startsWith(k.kafkaName) ? k.message : `${k.kafkaName}: ${k.message}`);
