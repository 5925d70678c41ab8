/**
 * Topic configs: Kafka's names, types, defaults and valid ranges (LogConfig / TopicConfig), plus
 * Tributary's own `inline.max.bytes`. A topic stores only what was set on it; everything else is
 * the default here. Unknown names and bad values are INVALID_CONFIG, as in Kafka.
 */
import { KafkaError } from '../protocol/errors.js';

/** A value's problem, in words ("must be ..."), or null when it is valid. */
export type Check = (v: string) => string | null;

export interface ConfigDef {
  readonly default: string;
  readonly check: Check;
  readonly doc: string;
}

const LONG_MAX = '9223372036854775807';

export const int = (min: number, max = 2 ** 31 - 1): Check => (v) =>
  /^-?\d+$/.test(v) && Number(v) >= min && Number(v) <= max ? null : `must be an integer in [${min}, ${max}]`;
export const long = (min: number): Check => (v) =>
  /^-?\d+$/.test(v) && Number(v) >= min ? null : `must be an integer ≥ ${min}`;
const ratio: Check = (v) => (/^\d*\.?\d+$/.test(v) && Number(v) >= 0 && Number(v) <= 1 ? null : 'must be a number in [0, 1]');
export const bool: Check = (v) => (v === 'true' || v === 'false' ? null : 'must be true or false');
const oneOf = (...allowed: string[]): Check => (v) => (allowed.includes(v) ? null : `must be one of ${allowed.join(', ')}`);
const listOf = (...allowed: string[]): Check => (v) =>
  v.split(',').map((s) => s.trim()).every((s) => allowed.includes(s)) && v.trim() !== ''
    ? null : `must be a list of ${allowed.join(', ')}`;

export const def = (d: string, check: Check, doc: string): ConfigDef => ({ default: d, check, doc });

export const TOPIC_CONFIGS: Readonly<Record<string, ConfigDef>> = {
  'cleanup.policy': def('delete', listOf('delete', 'compact'), 'Retention policy for old log segments.'),
  'compression.type': def('producer', oneOf('producer', 'uncompressed', 'gzip'), 'Compression of stored batches (producer = as sent; the HTTP API sends uncompressed).'),
  'delete.retention.ms': def('86400000', long(0), 'How long delete tombstones are kept for compacted topics.'),
  'file.delete.delay.ms': def('60000', long(0), 'Delay before deleting a segment from storage.'),
  'flush.messages': def(LONG_MAX, long(1), 'Accepted for compatibility; every append is durable.'),
  'flush.ms': def(LONG_MAX, long(0), 'Accepted for compatibility; every append is durable.'),
  'index.interval.bytes': def('4096', int(0), 'Bytes between offset index entries in segments.'),
  'max.compaction.lag.ms': def(LONG_MAX, long(1), 'Maximum time a message stays uncompacted.'),
  'max.message.bytes': def('1048588', int(0), 'Largest record batch size allowed.'),
  'message.timestamp.type': def('CreateTime', oneOf('CreateTime', 'LogAppendTime'), 'Whether timestamps are the producer\'s or the append time.'),
  'message.timestamp.before.max.ms': def(LONG_MAX, long(0), 'Largest allowed amount a record timestamp may be earlier than the append time.'),
  'message.timestamp.after.max.ms': def(LONG_MAX, long(0), 'Largest allowed amount a record timestamp may be later than the append time.'),
  'min.cleanable.dirty.ratio': def('0.5', ratio, 'Dirty ratio that makes a log eligible for compaction.'),
  'min.compaction.lag.ms': def('0', long(0), 'Minimum time a message stays uncompacted.'),
  'min.insync.replicas': def('1', int(1), 'Fewest in-sync replicas for an acks=all write to succeed.'),
  'preallocate': def('false', bool, 'Accepted for compatibility.'),
  'retention.bytes': def('-1', long(-1), 'Largest size of a partition before old segments are deleted (-1: no limit).'),
  'retention.ms': def('604800000', long(-1), 'Longest time a segment is kept (-1: no limit).'),
  // Tributary's own defaults (Kafka: 1 GiB and 7 days, which would keep every byte in DynamoDB):
  // the table tail is the expensive tier, so it rolls to S3 at 16 MiB or after an hour (docs/tiered-log.md).
  'segment.bytes': def('16777216', int(14), 'Segment size in bytes: the replica tables\' tail rolls to an S3 segment at this size.'),
  'segment.index.bytes': def('10485760', int(4), 'Size of a segment\'s offset index.'),
  'segment.jitter.ms': def('0', long(0), 'Random jitter subtracted from segment.ms.'),
  'segment.ms': def('3600000', long(1), 'Time after which the replica tables\' tail is rolled to an S3 segment.'),
  'unclean.leader.election.enable': def('false', bool, 'Whether an out-of-sync replica may become leader (data loss).'),
  'inline.max.bytes': def('8192', int(0, 350_000), 'Tributary: batches up to this size are kept inline in the replica tables; larger ones go to S3.'),
};

export function isTopicConfig(name: string): boolean {
  return Object.hasOwn(TOPIC_CONFIGS, name);
}

/** Validates one name/value pair; throws INVALID_CONFIG naming the problem. */
export function checkTopicConfig(name: string, value: unknown): string {
  return checkConfigValue(TOPIC_CONFIGS, 'topic', name, value);
}

/**
 * Validates one name/value pair against a table of configs (`kind` names it in the message);
 * returns the value as stored, trimmed. Throws INVALID_CONFIG naming the problem.
 */
export function checkConfigValue(defs: Readonly<Record<string, ConfigDef>>, kind: string, name: string, value: unknown): string {
  const d = Object.hasOwn(defs, name) ? defs[name] : undefined;
  if (!d) throw new KafkaError('INVALID_CONFIG', `Unknown ${kind} config name: ${name}`);
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new KafkaError('INVALID_CONFIG', `Invalid value for configuration ${name}: must be a string`);
  }
  const v = String(value).trim();
  const problem = d.check(v);
  if (problem) throw new KafkaError('INVALID_CONFIG', `Invalid value ${v} for configuration ${name}: ${problem}`);
  return v;
}

/** Validates a whole set of configs (unknown names, bad values, duplicates). */
export function checkTopicConfigs(entries: readonly { name: string; value: unknown }[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of entries) {
    if (Object.hasOwn(out, e.name)) throw new KafkaError('INVALID_CONFIG', `Duplicate config name: ${e.name}`);
    out[e.name] = checkTopicConfig(e.name, e.value);
  }
  return out;
}

export interface EffectiveConfig {
  readonly name: string;
  readonly value: string;
  readonly isDefault: boolean;
  readonly doc: string;
}

/** All configs of a topic: set ones and defaults, sorted by name. */
export function effectiveConfigs(set: Readonly<Record<string, string>>): EffectiveConfig[] {
  return Object.entries(TOPIC_CONFIGS)
    .map(([name, d]) => ({
      name,
      value: set[name] ?? d.default,
      isDefault: !Object.hasOwn(set, name),
      doc: d.doc,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Numeric value of a config for a topic (set or default). */
export function numericConfig(set: Readonly<Record<string, string>>, name: string): number {
  const d = TOPIC_CONFIGS[name];
  if (!d) throw new Error(`unknown config ${name}`);
  return Number(set[name] ?? d.default);
}

export function stringConfig(set: Readonly<Record<string, string>>, name: string): string {
  const d = TOPIC_CONFIGS[name];
  if (!d) throw new Error(`unknown config ${name}`);
  return set[name] ?? d.default;
}
