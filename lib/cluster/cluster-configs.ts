/**
 * Cluster-wide broker configs: what Kafka sets with `kafka-configs --entity-type brokers
 * --entity-default` (a dynamic default for every broker), for the settings Tributary's controller
 * acts on — preferred-leader rebalancing, reassignment throttles and the self-balancer. Kafka's
 * names, types and defaults (KafkaConfig), except where a comment says otherwise. The cluster
 * stores only what was set; everything else is the default here. Unknown names and bad values are
 * INVALID_CONFIG, as in Kafka.
 *
 * Kafka reads `auto.leader.rebalance.enable` and `leader.imbalance.*` from each broker's
 * server.properties (their update mode is read-only). Tributary has no broker process and no
 * properties file, so here they are dynamic, like the rest.
 */
import { KafkaError } from '../protocol/errors.js';
import { bool, checkConfigValue, def, int, long, type ConfigDef } from './topic-configs.js';

/** The cluster config that says which item format the log writers use (`lib/storage/replica/items.ts`). */
export const LOG_FORMAT_CONFIG = 'tributary.log.format.version';
/** The format at which small batches written together share an item: what a new cluster starts at. */
export const PACKED_LOG_FORMAT = 2;

/** 10 MiB/s: Tributary's default for both reassignment throttles. */
export const DEFAULT_THROTTLED_RATE = 10 * 1024 * 1024;

const THROTTLE_DOC = 'Bytes per second the replicas being added by a reassignment may copy '
  + '(Tributary throttles only that traffic; the ISR\'s own replication is never throttled). '
  + 'Kafka\'s default is unlimited, and Kafka throttles only the replicas a topic lists in '
  + '*.replication.throttled.replicas; Tributary\'s self-balancer moves replicas on its own, so '
  + 'its moves are throttled from the start: 10 MiB/s.';

export const CLUSTER_CONFIGS = {
  'auto.leader.rebalance.enable': def('true', bool,
    'Whether the controller moves leadership back to preferred leaders when the imbalance passes leader.imbalance.per.broker.percentage.'),
  'leader.imbalance.per.broker.percentage': def('10', int(0, 100),
    'The share of a broker\'s partitions, in percent, that may be led by a replica other than the preferred one before the controller rebalances.'),
  'leader.imbalance.check.interval.seconds': def('300', long(1), 'How often the controller checks leader imbalance.'),
  'leader.replication.throttled.rate': def(String(DEFAULT_THROTTLED_RATE), long(1), `Leader side. ${THROTTLE_DOC}`),
  'follower.replication.throttled.rate': def(String(DEFAULT_THROTTLED_RATE), long(1), `Follower side. ${THROTTLE_DOC}`),
  'tributary.balancer.enable': def('true', bool,
    'Tributary: whether the self-balancer moves replicas when brokers are added or removed and when their load drifts apart.'),
  [LOG_FORMAT_CONFIG]: def('1', int(1, 2),
    'Tributary: the format of replica table items the log writers use, as Kafka\'s inter.broker.protocol.version gates what brokers write. '
    + '1: one batch an item. 2: small batches written together share an item (fewer, larger writes). A new cluster starts at 2; '
    + 'a cluster from a version before 2 existed stays at 1 until it is set, which is safe once every function of the deployment runs a version that reads it. '
    + 'A version from before cannot read what is written at 2: do not roll back past it once set.'),
} as const satisfies Readonly<Record<string, ConfigDef>>;

export type ClusterConfigName = keyof typeof CLUSTER_CONFIGS;

/** Every cluster config with its value parsed: booleans as booleans, integers and longs as numbers. */
export interface EffectiveClusterConfigs {
  readonly 'auto.leader.rebalance.enable': boolean;
  readonly 'leader.imbalance.per.broker.percentage': number;
  readonly 'leader.imbalance.check.interval.seconds': number;
  readonly 'leader.replication.throttled.rate': number;
  readonly 'follower.replication.throttled.rate': number;
  readonly 'tributary.balancer.enable': boolean;
  readonly 'tributary.log.format.version': number;
}

export function isClusterConfig(name: string): name is ClusterConfigName {
  return Object.hasOwn(CLUSTER_CONFIGS, name);
}

/** Validates one name/value pair; returns the value as stored. Throws INVALID_CONFIG naming the problem. */
export function checkClusterConfig(name: string, value: unknown): string {
  return checkConfigValue(CLUSTER_CONFIGS, 'broker', name, value);
}

export interface ClusterConfigChange {
  readonly name: string;
  /** `null` resets the config to its default (Kafka's DELETE operation). */
  readonly value: unknown;
}

/**
 * Kafka's IncrementalAlterConfigs (SET and DELETE) on the set configs: the configs set after
 * `changes`, each validated. Nothing is applied unless every change is valid; a name given twice
 * is INVALID_CONFIG, as in Kafka.
 */
export function applyClusterConfigChanges(set: Readonly<Record<string, string>>, changes: readonly ClusterConfigChange[]): Record<string, string> {
  const next: Record<string, string> = { ...set };
  const seen = new Set<string>();
  for (const c of changes) {
    if (seen.has(c.name)) throw new KafkaError('INVALID_CONFIG', `Duplicate config name: ${c.name}`);
    seen.add(c.name);
    if (c.value === null) {
      if (!isClusterConfig(c.name)) throw new KafkaError('INVALID_CONFIG', `Unknown broker config name: ${c.name}`);
      delete next[c.name];
    } else {
      next[c.name] = checkClusterConfig(c.name, c.value);
    }
  }
  return next;
}

export interface ClusterConfigEntry {
  readonly name: ClusterConfigName;
  readonly value: string;
  readonly default: string;
  readonly isDefault: boolean;
  readonly doc: string;
}

/** Every cluster config: the set ones and the defaults, sorted by name. Names the table does not know are left out. */
export function clusterConfigEntries(set: Readonly<Record<string, string>>): ClusterConfigEntry[] {
  return (Object.keys(CLUSTER_CONFIGS) as ClusterConfigName[]).sort().map((name) => {
    const d: ConfigDef = CLUSTER_CONFIGS[name];
    const isDefault = !Object.hasOwn(set, name);
    return { name, value: isDefault ? d.default : set[name] as string, default: d.default, isDefault, doc: d.doc };
  });
}

/** The typed view of the set configs (defaults for the rest). */
export function effectiveClusterConfigs(set: Readonly<Record<string, string>>): EffectiveClusterConfigs {
  const v = (name: ClusterConfigName): string => (Object.hasOwn(set, name) ? set[name] as string : CLUSTER_CONFIGS[name].default);
  return {
    'auto.leader.rebalance.enable': v('auto.leader.rebalance.enable') === 'true',
    'leader.imbalance.per.broker.percentage': Number(v('leader.imbalance.per.broker.percentage')),
    'leader.imbalance.check.interval.seconds': Number(v('leader.imbalance.check.interval.seconds')),
    'leader.replication.throttled.rate': Number(v('leader.replication.throttled.rate')),
    'follower.replication.throttled.rate': Number(v('follower.replication.throttled.rate')),
    'tributary.balancer.enable': v('tributary.balancer.enable') === 'true',
    [LOG_FORMAT_CONFIG]: Number(v(LOG_FORMAT_CONFIG)),
  };
}
