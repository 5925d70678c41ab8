/** `tributary topics|groups|quotas|cluster`: the admin client's calls as tables (or `--json`). */
import type { Command } from 'commander';
import { ConfigResourceTypes, TributaryProtocolError, type ResetTo, type Tributary } from '../client/index.js';
import { printJson, printTable, UsageError } from './output.js';

type Ctx = () => { t: Tributary; json: boolean };

const collect = (v: string, prev: string[] = []) => [...prev, v];

function configPairs(list: string[] = []): { name: string; value: string }[] {
  return list.map((kv) => {
    const at = kv.indexOf('=');
    if (at <= 0) throw new UsageError(`INVALID_CONFIG: --config takes name=value, got '${kv}'.`);
    return { name: kv.slice(0, at), value: kv.slice(at + 1) };
  });
}

export const intOpt = (v: string | undefined, what: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new UsageError(`${what} must be an integer, got '${v}'.`);
  return n;
};

export function adminCommands(p: Command, ctx: Ctx): void {
  const topics = p.command('topics').description('list, create, describe, alter and delete topics');
  topics.command('list').description('every topic').action(async () => {
    const { t, json } = ctx();
    const names = (await t.admin().listTopics()).sort();
    if (json) printJson(names);
    else process.stdout.write(names.map((n) => `${n}\n`).join(''));
  });
  topics.command('create <topic>').description('create a topic')
    .option('--partitions <n>', 'partition count (default 1)')
    .option('--replication-factor <n>', 'replicas per partition (default min(3, brokers))')
    .option('--config <name=value>', 'a topic config; repeat for more', collect)
    .option('--validate-only', 'check, create nothing')
    .action(async (topic: string, o) => {
      const { t, json } = ctx();
      const partitions = intOpt(o.partitions, '--partitions');
      const rf = intOpt(o.replicationFactor, '--replication-factor');
      const created = await t.admin().createTopics({
        validateOnly: o.validateOnly ?? false,
        topics: [{ topic, ...(partitions !== undefined ? { numPartitions: partitions } : {}), ...(rf !== undefined ? { replicationFactor: rf } : {}), configEntries: configPairs(o.config) }],
      });
      if (!created) throw new TributaryProtocolError(`TOPIC_ALREADY_EXISTS: Topic '${topic}' already exists.`, 'TOPIC_ALREADY_EXISTS', 400, 40002, false);
      if (json) printJson({ topic, created: !o.validateOnly });
      else process.stderr.write(`${o.validateOnly ? 'Valid' : 'Created'}: ${topic}\n`);
    });
  topics.command('describe <topic>').description('partitions (leader, replicas, ISR, offsets) and configs set')
    .action(async (topic: string) => {
      const { t, json } = ctx();
      const admin = t.admin();
      const [meta, offsets, configs] = await Promise.all([
        admin.fetchTopicMetadata({ topics: [topic] }), admin.fetchTopicOffsets(topic),
        admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] }),
      ]);
      const parts = (meta.topics[0]?.partitions ?? []).map((x) => {
        const o = offsets.find((y) => y.partition === x.partitionId);
        return { partition: x.partitionId, leader: x.leader, replicas: x.replicas, isr: x.isr, low: Number(o?.low ?? 0), high: Number(o?.high ?? 0) };
      });
      const set = (configs.resources[0]?.configEntries ?? []).filter((c) => !c.isDefault).map((c) => ({ name: c.configName, value: c.configValue }));
      if (json) return printJson({ topic, partitions: parts, configs: set });
      printTable(['partition', 'leader', 'replicas', 'isr', 'log start', 'high watermark'], parts.map((x) => [x.partition, x.leader, x.replicas.join(','), x.isr.join(','), x.low, x.high]));
      if (set.length > 0) printTable(['config', 'value'], set.map((c) => [c.name, c.value]));
    });
  topics.command('alter <topic>').description('add partitions, set or reset configs')
    .option('--partitions <n>', 'grow to this many partitions')
    .option('--config <name=value>', 'set a config; repeat for more', collect)
    .option('--delete-config <name>', 'back to the default; repeat for more', collect)
    .action(async (topic: string, o) => {
      const { t, json } = ctx();
      const admin = t.admin();
      const partitions = intOpt(o.partitions, '--partitions');
      const entries = [...configPairs(o.config), ...((o.deleteConfig as string[] | undefined) ?? []).map((name) => ({ name, value: null }))];
      if (partitions === undefined && entries.length === 0) throw new UsageError('Say what to alter: --partitions, --config or --delete-config.');
      if (partitions !== undefined) await admin.createPartitions({ topicPartitions: [{ topic, count: partitions }] });
      if (entries.length > 0) await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: entries }] });
      if (json) printJson({ topic, altered: true });
      else process.stderr.write(`Altered: ${topic}\n`);
    });
  topics.command('delete <topic>').description('delete a topic').action(async (topic: string) => {
    const { t, json } = ctx();
    await t.admin().deleteTopics({ topics: [topic] });
    if (json) printJson({ topic, deleted: true });
    else process.stderr.write(`Deleted: ${topic}\n`);
  });

  const groups = p.command('groups').description('list, describe, show lag of and reset consumer groups');
  groups.command('list').description('every group with its state').action(async () => {
    const { t, json } = ctx();
    const r = await t.admin().listGroups();
    if (json) printJson(r.groups);
    else printTable(['group', 'state'], r.groups.map((g) => [g.groupId, g.state]));
  });
  groups.command('describe <group>').description('state, assignor and members with their partitions').action(async (group: string) => {
    const { t, json } = ctx();
    const g = (await t.admin().describeGroups([group])).groups[0];
    if (json) return printJson(g);
    process.stdout.write(`${group}: ${g?.state} (assignor ${g?.protocol})\n`);
    printTable(['member', 'client', 'epoch', 'partitions'], (g?.members ?? []).map((m) => [m.memberId, m.clientId, m.memberEpoch, m.assignment.map((a) => `${a.topic}-${a.partition}`).join(' ')]));
  });
  groups.command('lag <group>').description('committed offset, log end offset and lag per partition').action(async (group: string) => {
    const { t, json } = ctx();
    const lag = await t.admin().fetchGroupLag(group);
    if (json) return printJson(lag);
    printTable(['topic', 'partition', 'committed', 'log end', 'lag', 'member'], lag.map((l) => [l.topic, l.partition, l.currentOffset, l.logEndOffset, l.lag, l.memberId]));
  });
  groups.command('reset <group>').description('move committed offsets (the group must have no live members)')
    .requiredOption('--topic <topic>', 'the topic whose offsets move')
    .option('--partition <n>', 'only this partition')
    .option('--to-earliest').option('--to-latest').option('--to-offset <n>').option('--to-timestamp <t>').option('--shift-by <n>')
    .action(async (group: string, o) => {
      const { t, json } = ctx();
      const targets: ResetTo[] = [
        ...(o.toEarliest ? ['earliest' as const] : []), ...(o.toLatest ? ['latest' as const] : []),
        ...(o.toOffset !== undefined ? [{ offset: intOpt(o.toOffset, '--to-offset') as number }] : []),
        ...(o.toTimestamp !== undefined ? [{ timestamp: /^\d+$/.test(o.toTimestamp) ? Number(o.toTimestamp) : o.toTimestamp }] : []),
        ...(o.shiftBy !== undefined ? [{ shiftBy: intOpt(o.shiftBy, '--shift-by') as number }] : []),
      ];
      if (targets.length !== 1) throw new UsageError('Give exactly one of --to-earliest, --to-latest, --to-offset, --to-timestamp, --shift-by.');
      const partition = intOpt(o.partition, '--partition');
      const out = await t.admin().resetOffsetsTo({
        groupId: group, to: targets[0] as ResetTo,
        ...(partition !== undefined ? { partitions: [{ topic: o.topic, partition }] } : { topics: [o.topic] }),
      });
      if (json) return printJson(out);
      printTable(['topic', 'partition', 'offset'], out.map((x) => [x.topic, x.partition, x.offset]));
    });

  const quotas = p.command('quotas').description('list, set and delete client quotas per principal (<default> for every principal)');
  const rateOpt = (v: string | undefined, what: string): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${what} must be a positive number, got '${v}'.`);
    return n;
  };
  quotas.command('list').description('every principal with quotas').action(async () => {
    const { t, json } = ctx();
    const { entries } = await t.admin().describeClientQuotas();
    if (json) return printJson(entries);
    const show = (n: number | undefined) => (n === undefined ? '-' : n);
    printTable(['principal', 'producer_byte_rate', 'consumer_byte_rate', 'request_rate'],
      entries.map((e) => [e.principal, show(e.quotas.producer_byte_rate), show(e.quotas.consumer_byte_rate), show(e.quotas.request_rate)]));
  });
  quotas.command('set <principal>').description('set a principal\'s quotas, replacing the ones it had (e.g. User:alice)')
    .option('--producer-byte-rate <n>', 'bytes/s the principal may produce')
    .option('--consumer-byte-rate <n>', 'bytes/s the principal may fetch')
    .option('--request-rate <n>', 'requests/s the principal may make')
    .action(async (principal: string, o) => {
      const { t, json } = ctx();
      const values = {
        producer_byte_rate: rateOpt(o.producerByteRate, '--producer-byte-rate'),
        consumer_byte_rate: rateOpt(o.consumerByteRate, '--consumer-byte-rate'),
        request_rate: rateOpt(o.requestRate, '--request-rate'),
      };
      const set = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
      if (Object.keys(set).length === 0) throw new UsageError('Give at least one of --producer-byte-rate, --consumer-byte-rate, --request-rate.');
      await t.admin().alterClientQuotas({ entries: [{ principal, quotas: set }] });
      if (json) printJson({ principal, quotas: set });
      else process.stderr.write(`Set: ${principal}\n`);
    });
  quotas.command('delete <principal>').description('remove a principal\'s quotas').action(async (principal: string) => {
    const { t, json } = ctx();
    await t.admin().alterClientQuotas({ entries: [{ principal, quotas: null }] });
    if (json) printJson({ principal, deleted: true });
    else process.stderr.write(`Deleted: ${principal}\n`);
  });

  p.command('cluster').description('brokers, the controller, and partitions per broker').action(async () => {
    const { t, json } = ctx();
    const admin = t.admin();
    const cluster = await admin.describeCluster();
    const per = new Map(cluster.brokers.map((b) => [b.nodeId, { leaders: b.leaderCount ?? 0, replicas: b.replicaCount ?? 0 }]));
    // Tributary's brokers carry their counts; another REST Proxy's are counted from every topic's metadata.
    const counted = cluster.brokers.every((b) => b.replicaCount !== undefined && b.leaderCount !== undefined);
    for (const topic of counted ? [] : (await admin.fetchTopicMetadata()).topics) {
      for (const part of topic.partitions) {
        for (const r of part.replicas) per.set(r, { leaders: per.get(r)?.leaders ?? 0, replicas: (per.get(r)?.replicas ?? 0) + 1 });
        const l = per.get(part.leader);
        if (l) l.leaders++;
      }
    }
    const brokers = cluster.brokers.map((b) => ({ ...b, partitions: per.get(b.nodeId)?.replicas ?? 0, leaders: per.get(b.nodeId)?.leaders ?? 0 }));
    if (json) return printJson({ clusterId: cluster.clusterId, controller: cluster.controller, brokers });
    process.stdout.write(`cluster ${cluster.clusterId}, controller ${cluster.controller ?? 'none'}\n`);
    printTable(['broker', 'rack', 'state', 'partitions', 'leaders', 'bytes'], brokers.map((b) => [b.nodeId, b.rack, b.state, b.partitions, b.leaders, b.bytes]));
  });
}
