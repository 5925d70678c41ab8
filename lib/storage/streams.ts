/**
 * DynamoDB Streams reads (DescribeStream, GetShardIterator, GetRecords) for the local stack's
 * stream poller (local/stream-poller.ts), which plays Lambda's event source mapping. Records
 * come out exactly as Lambda hands them to a function in a `DynamoDBStreamEvent`: plain JSON,
 * attribute values in DynamoDB JSON with binary as base64 strings, `ApproximateCreationDateTime`
 * in epoch seconds, and `eventSourceARN` set to the stream ARN.
 *
 * Clients follow lib/storage/clients.ts: one per endpoint, explicit connect and request timeouts,
 * bounded attempts — a paused store fails a read instead of hanging the poller.
 *
 * DynamoDB Local 3.3.1 (measured): one open shard per table, rolled over every 4 h (a background
 * job, not by size); iterators expire after 15 min (ExpiredIteratorException) and an iterator can
 * be reused until then; records are kept 24 h; sequence numbers are 21 digits from one counter
 * shared by all tables of the process; `awsRegion` is "ddblocal"; `ApproximateCreationDateTime` is
 * rounded down to the minute (AWS: to the second); a write that changes nothing emits no record;
 * a deleted table's stream stays describable as DISABLED with its shard closed; a recreated
 * table gets a new stream ARN (its label is the creation time).
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type AttributeValue as SdkAttributeValue,
  type _Record as SdkRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord, StreamRecord } from 'aws-lambda';
import { config } from '../config.js';
import { dynamo, storeRequestHandler } from './clients.js';

export type { DynamoDBRecord } from 'aws-lambda';

/** Optional per-call settings: an abort signal ends an in-flight request at once (used by `StreamPoller.stop()`). */
export interface StreamCallOptions {
  readonly signal?: AbortSignal;
}

const streamClients = new Map<string, DynamoDBStreamsClient>();

/**
 * The Streams endpoint used when none is given: `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`, else
 * `AWS_ENDPOINT_URL_DYNAMODB` (DynamoDB Local and LocalStack serve Streams on the DynamoDB port),
 * else the SDK's own resolution (`AWS_ENDPOINT_URL` or the regional Streams endpoint).
 */
function defaultEndpoint(): string | undefined {
  const env = process.env;
  return env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS || env.AWS_ENDPOINT_URL_DYNAMODB || undefined;
}

/** The DynamoDB Streams client for an endpoint (one per endpoint, cached). */
export function streams(endpoint?: string): DynamoDBStreamsClient {
  const resolved = endpoint ?? defaultEndpoint();
  const key = resolved ?? '';
  let client = streamClients.get(key);
  if (!client) {
    client = new DynamoDBStreamsClient({
      ...(resolved ? { endpoint: resolved } : {}),
      maxAttempts: config().storeMaxAttempts,
      requestHandler: storeRequestHandler(),
    });
    streamClients.set(key, client);
  }
  return client;
}

/** Drop every cached Streams client (the counterpart of `resetClients` in clients.ts). */
export function resetStreamClients(): void {
  for (const c of streamClients.values()) c.destroy();
  streamClients.clear();
}

const sendOptions = (o?: StreamCallOptions) => (o?.signal ? { abortSignal: o.signal } : {});

/** The table's current stream ARN (`LatestStreamArn`); `undefined` when the table has no stream. */
export async function latestStreamArn(table: string, endpoint?: string, o?: StreamCallOptions): Promise<string | undefined> {
  const out = await dynamo(endpoint).send(new DescribeTableCommand({ TableName: table }), sendOptions(o));
  return out.Table?.StreamSpecification?.StreamEnabled === false ? undefined : out.Table?.LatestStreamArn;
}

export interface StreamShard {
  readonly shardId: string;
  /** The shard this one was split from; read it to its end first. */
  readonly parentShardId: string | undefined;
  readonly startingSequenceNumber: string | undefined;
  /** Set once the shard is closed (no more records will be added). */
  readonly endingSequenceNumber: string | undefined;
}

export interface StreamDescription {
  readonly streamArn: string;
  /** `ENABLED`, `ENABLING`, `DISABLED` (table deleted or stream turned off) or `DISABLING`. */
  readonly status: string | undefined;
  readonly shards: StreamShard[];
}

/** Every shard of a stream (DescribeStream, following `LastEvaluatedShardId`), with the stream's status. */
export async function describeStream(streamArn: string, endpoint?: string, o?: StreamCallOptions): Promise<StreamDescription> {
  const shards: StreamShard[] = [];
  let status: string | undefined;
  let start: string | undefined;
  for (let page = 0; page < 10_000; page++) {
    const out = await streams(endpoint).send(new DescribeStreamCommand({
      StreamArn: streamArn, Limit: 100, ...(start ? { ExclusiveStartShardId: start } : {}),
    }), sendOptions(o));
    const d = out.StreamDescription;
    status = d?.StreamStatus;
    for (const s of d?.Shards ?? []) {
      if (!s.ShardId) continue;
      shards.push({
        shardId: s.ShardId,
        parentShardId: s.ParentShardId || undefined,
        startingSequenceNumber: s.SequenceNumberRange?.StartingSequenceNumber,
        endingSequenceNumber: s.SequenceNumberRange?.EndingSequenceNumber,
      });
    }
    start = d?.LastEvaluatedShardId;
    if (!start) break;
  }
  return { streamArn, status, shards };
}

export type ShardIteratorType = 'TRIM_HORIZON' | 'LATEST' | 'AFTER_SEQUENCE_NUMBER' | 'AT_SEQUENCE_NUMBER';

/** A shard iterator; `seq` is required for the `*_SEQUENCE_NUMBER` types. */
export async function shardIterator(
  streamArn: string, shardId: string, type: ShardIteratorType, seq?: string, endpoint?: string, o?: StreamCallOptions,
): Promise<string> {
  if ((type === 'AFTER_SEQUENCE_NUMBER' || type === 'AT_SEQUENCE_NUMBER') && !seq) throw new Error(`${type} needs a sequence number`);
  const out = await streams(endpoint).send(new GetShardIteratorCommand({
    StreamArn: streamArn, ShardId: shardId, ShardIteratorType: type,
    ...(type === 'AFTER_SEQUENCE_NUMBER' || type === 'AT_SEQUENCE_NUMBER' ? { SequenceNumber: seq } : {}),
  }), sendOptions(o));
  if (!out.ShardIterator) throw new Error(`no shard iterator returned for ${shardId} of ${streamArn}`);
  return out.ShardIterator;
}

export interface RecordsPage {
  /** In stream order, shaped as in a Lambda `DynamoDBStreamEvent`. */
  readonly records: DynamoDBRecord[];
  /** `undefined` once a closed shard has been read to its end. */
  readonly nextIterator: string | undefined;
}

/**
 * One GetRecords call (`limit` 1..1000). The stream ARN is the iterator's prefix in both AWS and
 * DynamoDB Local; pass `streamArn` to set `eventSourceARN` explicitly.
 */
export async function getRecords(iterator: string, endpoint?: string, limit = 100, o?: StreamCallOptions & { streamArn?: string }): Promise<RecordsPage> {
  const out = await streams(endpoint).send(new GetRecordsCommand({
    ShardIterator: iterator, Limit: Math.min(1000, Math.max(1, Math.floor(limit))),
  }), sendOptions(o));
  const arn = o?.streamArn ?? streamArnOfIterator(iterator);
  return { records: (out.Records ?? []).map((r) => toLambdaRecord(r, arn)), nextIterator: out.NextShardIterator || undefined };
}

/** Both AWS and DynamoDB Local build iterators as `<stream ARN>|<version>|<opaque>`. */
function streamArnOfIterator(iterator: string): string | undefined {
  const i = iterator.indexOf('|');
  return i > 0 && iterator.startsWith('arn:') ? iterator.slice(0, i) : undefined;
}

const base64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

/** SDK attribute value (binary as Uint8Array) → Lambda event JSON (binary as base64). */
export function toLambdaAttribute(v: SdkAttributeValue): AttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: base64(v.B) };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  if (v.NULL !== undefined) return { NULL: v.NULL };
  if (v.SS !== undefined) return { SS: [...v.SS] };
  if (v.NS !== undefined) return { NS: [...v.NS] };
  if (v.BS !== undefined) return { BS: v.BS.map(base64) };
  if (v.L !== undefined) return { L: v.L.map(toLambdaAttribute) };
  if (v.M !== undefined) return { M: toLambdaImage(v.M) };
  // The SDK turns an empty list or map from a stream into `{}`, losing which it was. Nothing the
  // replicator reads is an empty collection, so it becomes NULL rather than failing the shard.
  if (Object.keys(v).length === 0) return { NULL: true };
  throw new Error(`unknown attribute value type: ${JSON.stringify(Object.keys(v))}`);
}

export function toLambdaImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(image)) out[k] = toLambdaAttribute(v);
  return out;
}

/** One SDK stream record → the record as Lambda delivers it (same keys, same order, plain JSON). */
export function toLambdaRecord(r: SdkRecord, streamArn: string | undefined): DynamoDBRecord {
  const d = r.dynamodb;
  const dynamodb: StreamRecord | undefined = d && {
    ...(d.ApproximateCreationDateTime !== undefined ? { ApproximateCreationDateTime: d.ApproximateCreationDateTime.getTime() / 1000 } : {}),
    ...(d.Keys ? { Keys: toLambdaImage(d.Keys) } : {}),
    ...(d.NewImage ? { NewImage: toLambdaImage(d.NewImage) } : {}),
    ...(d.OldImage ? { OldImage: toLambdaImage(d.OldImage) } : {}),
    ...(d.SequenceNumber !== undefined ? { SequenceNumber: d.SequenceNumber } : {}),
    ...(d.SizeBytes !== undefined ? { SizeBytes: d.SizeBytes } : {}),
    ...(d.StreamViewType !== undefined ? { StreamViewType: d.StreamViewType } : {}),
  };
  return {
    ...(r.eventID !== undefined ? { eventID: r.eventID } : {}),
    ...(r.eventName !== undefined ? { eventName: r.eventName } : {}),
    ...(r.eventVersion !== undefined ? { eventVersion: r.eventVersion } : {}),
    eventSource: r.eventSource ?? 'aws:dynamodb',
    ...(r.awsRegion !== undefined ? { awsRegion: r.awsRegion } : {}),
    ...(dynamodb ? { dynamodb } : {}),
    ...(streamArn !== undefined ? { eventSourceARN: streamArn } : {}),
    // present only for TTL deletions: { type: 'Service', principalId: 'dynamodb.amazonaws.com' }
    ...(r.userIdentity ? { userIdentity: { type: r.userIdentity.Type, principalId: r.userIdentity.PrincipalId } } : {}),
  };
}

/**
 * What a failed Streams or DescribeTable call means to a poller:
 * - `expired-iterator`: get a new iterator (AFTER_SEQUENCE_NUMBER of the last record read);
 * - `trimmed`: the position is older than the stream's 24 h retention; restart at TRIM_HORIZON;
 * - `not-found`: the table or stream is gone (deleted, or a wiped in-memory store); look the ARN up again;
 * - `invalid`: the request was rejected (e.g. an iterator or sequence number from another stream);
 * - `throttled`: back off;
 * - `aborted`: the caller's signal fired;
 * - `unavailable`: the store did not answer (refused, reset, timed out, 5xx) — back off and retry.
 */
export type StreamErrorKind = 'expired-iterator' | 'trimmed' | 'not-found' | 'invalid' | 'throttled' | 'aborted' | 'unavailable';

export function streamErrorKind(err: unknown): StreamErrorKind {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  switch (e?.name) {
    case 'ExpiredIteratorException': return 'expired-iterator';
    case 'TrimmedDataAccessException': return 'trimmed';
    case 'ResourceNotFoundException': return 'not-found';
    case 'ValidationException': return 'invalid';
    case 'LimitExceededException':
    case 'ThrottlingException':
    case 'ProvisionedThroughputExceededException':
    case 'RequestLimitExceeded': return 'throttled';
    case 'AbortError': return 'aborted';
    default: return 'unavailable';
  }
}
