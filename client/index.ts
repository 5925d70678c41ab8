/**
 * Tributary's TypeScript SDK: `new Tributary({ url, auth })`, then `producer()`, `consumer({ groupId })`
 * and `admin()`, named and shaped as kafkajs's where the semantics match (docs/sdk.md lists the
 * differences). Runs wherever `fetch` does: Node 20+, browsers, edge runtimes.
 */
export { Tributary, type TributaryConfig } from './tributary.js';
export { Producer, Transaction, CompressionTypes, MAX_BATCH_ENTRIES, type ProducerConfig, type ProducerRecord, type Message, type RecordMetadata, type Acks, type SendOffsetsOptions, type GroupMetadata } from './producer.js';
export { Consumer } from './consumer.js';
export type {
  ConsumerConfig, ConsumerRunConfig, EachMessagePayload, EachBatchPayload, Batch,
  RebalanceListener, TopicPartition, TopicPartitionOffset, ConsumerEvent,
} from './consumer-types.js';
export {
  Admin, ConfigResourceTypes, type ITopicConfig, type PartitionMetadata, type ConfigEntry, type BrokerDescription, type GroupLag, type ResetTo,
  type ClientQuotas, type ClientQuotaEntry, type FetchMessagesOptions,
} from './admin.js';
export type {
  ClusterMetadata, ControllerDescription, MetadataPartition, PartitionDescription, ReplicaStateDescription, SegmentDescription, LogTiers,
} from './cluster-views.js';
export {
  AclResourceTypes, ResourcePatternTypes, AclOperationTypes, AclPermissionTypes, type AclEntry, type AclFilter, type AclDescription, type AclEnum,
} from './acls.js';
export {
  TRANSACTION_STATES, type TransactionState, type TransactionDescription, type ListTransactionsOptions, type ProducerStateDescription, type EndedHangingTransaction,
} from './transactions-admin.js';
export type {
  SubscriptionDescription, SubscriptionDetails, SubscriptionPartitionState, SubscriptionEndpoint, SubscriptionEndpointDescription,
  SubscriptionStartingPosition, SubscriptionIsolationLevel, CreateSubscriptionOptions, CreatedSubscription,
} from './subscriptions-admin.js';
export { verifyWebhook, signWebhook, newWebhookSecret, type WebhookHeaders } from '../lib/protocol/webhook-signature.js';
export type { KafkaMessage, FetchResult } from './connection.js';
export { signV4, type AuthConfig, type AwsCredentials, type AwsCredentialsProvider, type OutgoingRequest } from './auth.js';
export { TributaryError, TributaryProtocolError, TributaryConnectionError } from './errors.js';
export { defaultPartitioner, partitionForKey, type Partitioner, type PartitionerArgs } from './partitioner.js';
export type { RetryOptions } from './retry.js';
export type { FetchLike } from './transport.js';
