/**
 * The one table of AWS list prices and published latencies the benchmarks turn counts into, dated.
 * Nothing here is fetched at run time: when a price changes, change it here (and the date).
 * Region us-east-1; "GB" in AWS prices is 2^30 bytes for storage and data-processed meters.
 */

export const PRICES_DATE = '2026-12-01';
export const PRICES_REGION = 'us-east-1';

/** One price or figure with where it comes from. */
export interface Sourced {
  readonly value: number;
  readonly unit: string;
  readonly source: string;
}

const s = (value: number, unit: string, source: string): Sourced => ({ value, unit, source });

const DDB = 'https://aws.amazon.com/dynamodb/pricing/on-demand/';
const S3 = 'https://aws.amazon.com/s3/pricing/';
const S3_EXPRESS = `${S3}; https://aws.amazon.com/s3/faqs/ (S3 Express One Zone's worked example, us-east-1)`;
const LAMBDA = 'https://aws.amazon.com/lambda/pricing/';
const APIGW = 'https://aws.amazon.com/api-gateway/pricing/';
const KINESIS = 'https://aws.amazon.com/kinesis/data-streams/pricing/';
const MSK = 'https://aws.amazon.com/msk/pricing/';

/** What Tributary's own parts cost (on-demand list prices, after AWS's November 2024 DynamoDB on-demand cut). */
export const PRICE = {
  dynamodb: {
    /** Per write request unit: 1 KB written (2 inside a transaction). */
    wru: s(0.625 / 1e6, '$ per WRU', DDB),
    /** Per read request unit: 4 KB strongly consistent (half an RRU eventually consistent; 2 in a transaction). */
    rru: s(0.125 / 1e6, '$ per RRU', DDB),
    /** Table storage; each item is billed at its size plus 100 bytes. */
    gbMonth: s(0.25, '$ per GB-month', DDB),
    /** Reads of a table's stream by a Lambda event source mapping are free. */
    streamReadByLambda: s(0, '$ per GetRecords from Lambda triggers', DDB),
  },
  s3: {
    /** PUT, COPY, POST, LIST: the "PUT tier". */
    put: s(0.005 / 1000, '$ per PUT/COPY/POST/LIST request', S3),
    /** GET, SELECT and all other requests except DELETE (free). */
    get: s(0.0004 / 1000, '$ per GET request', S3),
    gbMonth: s(0.023, '$ per GB-month (first 50 TB)', S3),
  },
  /**
   * S3 Express One Zone (a directory bucket: the group commit's stage). The upload and retrieval
   * charges apply to every byte of a request, not only to the part beyond 512 KB: the S3 FAQ's
   * worked example charges them on 10 KB requests.
   */
  s3Express: {
    /** PUT, and as in S3's PUT tier COPY, POST and LIST (the FAQ's example shows PUTs); DELETE is free. */
    put: s(0.00113 / 1000, '$ per PUT/COPY/POST/LIST request', S3_EXPRESS),
    get: s(0.00003 / 1000, '$ per GET request', S3_EXPRESS),
    uploadGb: s(0.0032, '$ per GB uploaded (every byte of a PUT)', S3_EXPRESS),
    retrievalGb: s(0.0006, '$ per GB retrieved (every byte of a GET)', S3_EXPRESS),
    gbMonth: s(0.11, '$ per GB-month', S3_EXPRESS),
  },
  lambda: {
    request: s(0.2 / 1e6, '$ per invocation', LAMBDA),
    /** arm64 (the CDK construct deploys ARM_64: cdk/cluster.ts). */
    gbSecond: s(0.0000133334, '$ per GB-second, arm64, first 7.5 billion GB-s', LAMBDA),
  },
  apiGateway: {
    /** HTTP API, first 300 million requests a month. */
    httpRequest: s(1.0 / 1e6, '$ per HTTP API request', APIGW),
    /** HTTP API requests are metered in 512 KB increments: 513 KB counts as two requests. */
    meteringStepBytes: s(512 * 1024, 'bytes per metered HTTP API request', APIGW),
    /** WebSocket API messages, both ways, first billion a month; metered in 32 KB increments. */
    websocketMessage: s(1.0 / 1e6, '$ per WebSocket message (32 KB increments)', APIGW),
    websocketConnectionMinute: s(0.25 / 1e6, '$ per WebSocket connection-minute', APIGW),
  },
} as const;

/** What the managed alternatives charge for the same workloads. */
export const ALTERNATIVES = {
  kinesisOnDemand: {
    /** Data in, with each record rounded up to the nearest 1 KB. */
    gbIn: s(0.08, '$ per GB ingested (records rounded up to 1 KB)', KINESIS),
    gbOut: s(0.04, '$ per GB retrieved', KINESIS),
    streamHour: s(0.04, '$ per stream-hour', KINESIS),
    /** 24 h retention is included; 7 days (Kafka's default retention.ms) is extended retention. */
    extendedRetentionGbMonth: s(0.1, '$ per GB-month, retention from 24 h up to 7 days', KINESIS),
    recordRoundingBytes: s(1024, 'bytes a record is rounded up to', KINESIS),
  },
  mskServerless: {
    gbIn: s(0.1, '$ per GB in', MSK),
    gbOut: s(0.05, '$ per GB out', MSK),
    clusterHour: s(0.75, '$ per cluster-hour', MSK),
    partitionHour: s(0.0015, '$ per partition-hour', MSK),
    storageGbMonth: s(0.1, '$ per GB-month stored', MSK),
  },
  warpStream: {
    /** Default configuration on S3 Standard (250 ms agent batch timeout). */
    produceP50S3StandardMs: s(250, 'ms produce p50, S3 Standard',
      'https://docs.warpstream.com/warpstream/byoc/advanced-agent-deployment-options/low-latency-clusters (default batchTimeout 250 ms); https://aws.amazon.com/blogs/storage/how-warpstream-enables-cost-effective-low-latency-streaming-with-amazon-s3-express-one-zone (~400-600 ms p99 on S3 Standard)'),
    produceP50S3ExpressMs: s(105, 'ms produce p50, S3 Express One Zone',
      'https://warpstream.com/blog/warpstream-s3-express-one-zone-benchmark-and-total-cost-of-ownership (p50 105 ms, p99 169 ms)'),
  },
} as const;

/**
 * Per-request latencies for the latency model: p50 of one call as a client in the same region
 * sees it. AWS publishes a bound ("single-digit milliseconds"), not a distribution, so each figure
 * is labelled with what it rests on; `high` is the pessimistic end used for the model's range.
 */
export interface LatencyFigure {
  readonly p50Ms: number;
  readonly highMs: number;
  readonly source: string;
}

const l = (p50Ms: number, highMs: number, source: string): LatencyFigure => ({ p50Ms, highMs, source });

const DDB_LATENCY = 'https://repost.aws/knowledge-center/dynamodb-high-latency ("For most atomic operations, such as GetItem and PutItem, an average latency is in single-digit milliseconds"); '
  + 'https://aws.amazon.com/blogs/database/understanding-amazon-dynamodb-latency/ ("single-digit millisecond performance for workloads of all sizes")';

export const LATENCY = {
  /** GetItem, strongly consistent Query of a few items. */
  dynamodbRead: l(4, 9, `${DDB_LATENCY}; 4 ms assumed within the single-digit bound, 9 ms its top`),
  /** PutItem, UpdateItem, DeleteItem. */
  dynamodbWrite: l(5, 9, `${DDB_LATENCY}; 5 ms assumed, 9 ms the top of single digits`),
  /**
   * TransactWriteItems / TransactGetItems: a transaction is prepared and committed on every item's
   * partition (two phases), so it is modelled as two writes.
   */
  dynamodbTransaction: l(10, 18, `${DDB_LATENCY}; https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html (two-phase, items on several partitions): modelled as 2 writes`),
  /** BatchWriteItem, BatchGetItem, Scan: several partitions in parallel. */
  dynamodbBatch: l(8, 15, `${DDB_LATENCY} (Query/Scan/Batch latency "depends on many factors"): modelled as 2 reads in a row`),
  /** S3 Standard PUT of a small object (up to a few MB). */
  s3Put: l(100, 200, 'https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-design-patterns.html (S3 Standard small-object latency 100-200 ms to the first byte)'),
  /** S3 Standard GET, first byte. */
  s3Get: l(100, 200, 'https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-design-patterns.html (100-200 ms first-byte latency)'),
  /** S3 DELETE, LIST and the rest. */
  s3Other: l(50, 200, 'same page as s3Put; metadata-only requests assumed at half a GET'),
  /**
   * API Gateway HTTP API's own overhead per request (its Latency metric minus IntegrationLatency).
   * AWS publishes no figure; HTTP APIs were built as the low-latency option.
   */
  apiGateway: l(5, 15, 'https://cloudonaut.io/review-api-gateway-http-apis/ (HTTP API measured faster than REST API); AWS publishes no number: 5 ms assumed, 15 ms pessimistic'),
  /** A warm Lambda invoke's own overhead (routing to a warm sandbox; no Init phase). */
  lambdaWarmInvoke: l(2, 10, 'https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html (a warm environment skips Init); AWS publishes no overhead figure: 2 ms assumed, 10 ms pessimistic'),
  /** An asynchronous invoke (InvocationType Event): accepted into the function's queue, then handed to a warm environment. */
  lambdaAsyncInvoke: l(10, 50, 'https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html (the event is queued; "a separate process reads events from the queue and runs your function"); AWS publishes no figure: 10 ms assumed from the Invoke to a warm environment running it, 50 ms pessimistic'),
} as const;

export type LatencyKind = keyof typeof LATENCY;

/** Which latency figure a store call is modelled with. */
export function latencyKind(service: 'dynamodb' | 's3', op: string): LatencyKind {
  if (service === 's3') return op === 'PutObject' || op === 'UploadPart' || op === 'CompleteMultipartUpload' ? 's3Put' : op === 'GetObject' ? 's3Get' : 's3Other';
  if (/^Transact/.test(op)) return 'dynamodbTransaction';
  if (/^(Batch|Scan)/.test(op)) return 'dynamodbBatch';
  if (/^(Get|Query)/.test(op)) return 'dynamodbRead';
  return 'dynamodbWrite';
}

/** S3's request tiers: what is billed as a PUT and as a GET; DELETE is free. */
export const S3_PUT_TIER: ReadonlySet<string> = new Set(['PutObject', 'CopyObject', 'ListObjectsV2', 'CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload']);
export const S3_GET_TIER: ReadonlySet<string> = new Set(['GetObject', 'HeadObject']);
/** The same tiers on the group commit's stage (S3 Express One Zone; lib/storage/metering.ts counts its requests as `Stage` + the command). */
export const STAGE_PUT_TIER: ReadonlySet<string> = new Set([...S3_PUT_TIER].map((op) => `Stage${op}`));
export const STAGE_GET_TIER: ReadonlySet<string> = new Set([...S3_GET_TIER].map((op) => `Stage${op}`));
/** DynamoDB bills stored items by their size plus 100 bytes each. */
export const DDB_ITEM_OVERHEAD_BYTES = 100;
/** DynamoDB's per-partition (and per-item) write ceiling: 1,000 WCU/s. */
export const DDB_PARTITION_WCU_PER_SECOND = s(1000, 'write units per second on one partition (and so on one item)',
  'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html');
export const DDB_PARTITION_RCU_PER_SECOND = s(3000, 'read units per second on one partition',
  'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html');

/** One sentence naming the prices, for a result's notes. */
export function pricesNote(): string {
  return `Prices: AWS list prices, ${PRICES_REGION}, as of ${PRICES_DATE} (bench/lib/prices.ts, each with its source): `
    + 'DynamoDB on-demand $0.625 per million write units, $0.125 per million read units, $0.25 per GB-month; '
    + 'S3 Standard $0.005 per 1,000 PUT/COPY/POST/LIST, $0.0004 per 1,000 GET, DELETE free, $0.023 per GB-month; '
    + 'Lambda arm64 $0.20 per million requests, $0.0000133334 per GB-second; HTTP API $1.00 per million requests, metered in 512 KB steps; '
    + 'Kinesis Data Streams on-demand $0.08/GB in (records rounded up to 1 KB), $0.04/GB out, $0.04 per stream-hour; '
    + 'MSK Serverless $0.10/GB in, $0.05/GB out, $0.75 per cluster-hour, $0.0015 per partition-hour, $0.10 per GB-month.';
}
