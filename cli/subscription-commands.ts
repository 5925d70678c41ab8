/**
 * `tributary subscriptions create|list|describe|delete`: push subscriptions — the cluster reads a
 * topic as a consumer group and posts its records, signed, to an HTTPS endpoint (`--http`) or a
 * Lambda function (`--lambda`) — as tables (or `--json`). `create` shows the signing secret once.
 * (`--http`, not `--url`: `--url` is the cluster's, and commander reads it at any position.)
 */
import { Option, type Command } from 'commander';
import type { SubscriptionDescription, SubscriptionEndpoint, SubscriptionDetails, Tributary } from '../client/index.js';
import { intOpt } from './admin-commands.js';
import { printJson, printTable, UsageError } from './output.js';

type Ctx = () => { t: Tributary; json: boolean };
const collect = (v: string, prev: string[] = []) => [...prev, v];
const time = (ms: number | null): string => (ms === null || !Number.isFinite(ms) ? '' : new Date(ms).toISOString());

interface CreateOptions {
  topic: string; group: string; http?: string; header?: string[]; lambda?: string;
  startingPosition?: 'earliest' | 'latest'; isolationLevel?: 'read_uncommitted' | 'read_committed';
  maxBatchRecords?: string; maxRetries?: string; deadLetterTopic?: string;
}

/** The endpoint the options name: `--http` (with `--header`s) or `--lambda`, one of them. */
function endpointOf(o: CreateOptions): SubscriptionEndpoint {
  if ((o.http === undefined) === (o.lambda === undefined)) throw new UsageError('Name one endpoint: --http or --lambda.');
  if (o.lambda !== undefined) {
    if (o.header) throw new UsageError('--header goes with --http.');
    return { type: 'lambda', functionArn: o.lambda };
  }
  const headers: Record<string, string> = {};
  for (const kv of o.header ?? []) {
    const at = kv.indexOf('=');
    if (at <= 0) throw new UsageError(`--header takes name=value, got '${kv}'.`);
    headers[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return { type: 'http', url: o.http as string, ...(o.header ? { headers } : {}) };
}

const endpointText = (d: SubscriptionDescription): string => d.endpoint.type === 'lambda' ? `lambda ${d.endpoint.functionArn}`
  : `${d.endpoint.url}${d.endpoint.headerNames.length > 0 ? ` (headers: ${d.endpoint.headerNames.join(', ')})` : ''}`;

/** One row per subscription. */
function print(rows: SubscriptionDescription[]): void {
  printTable(
    ['subscription', 'topic', 'group', 'endpoint', 'start', 'isolation', 'batch', 'retries', 'dead letter topic', 'created'],
    rows.map((d) => [
      d.name, d.topic, d.groupId, endpointText(d), d.startingPosition, d.isolationLevel, d.maxBatchRecords,
      d.maxRetries ?? 'until delivered', d.deadLetterTopic, time(d.createdAt),
    ]),
  );
}

/** One row per partition: its committed offset and the batch being retried, if any. */
function printPartitions(d: SubscriptionDetails): void {
  if (d.partitions.length === 0) return;
  printTable(
    ['partition', 'committed offset', 'attempts', 'next attempt', 'last error'],
    d.partitions.map((p) => [p.partition, p.committedOffset, p.attempts, time(p.nextAttemptAt), p.lastError]),
  );
}

export function subscriptionCommands(p: Command, ctx: Ctx): void {
  const subs = p.command('subscriptions').description('push subscriptions: the cluster posts a topic\'s records to an HTTPS endpoint or a Lambda function');

  subs.command('create <name>').description('create a push subscription; prints its signing secret, once')
    .requiredOption('--topic <topic>', 'the topic to deliver')
    .requiredOption('--group <group>', 'the consumer group whose committed offsets record what was delivered')
    .option('--http <url>', 'deliver to this HTTPS endpoint (a signed POST per batch)')
    .option('--header <name=value>', 'a header on every delivery to --http; repeat for more', collect)
    .option('--lambda <function-arn>', 'deliver by invoking this Lambda function')
    .addOption(new Option('--starting-position <position>', 'where a partition with no committed offset starts (default latest)').choices(['earliest', 'latest']))
    .addOption(new Option('--isolation-level <level>', 'read_committed leaves out open and aborted transactions (default read_uncommitted)').choices(['read_uncommitted', 'read_committed']))
    .option('--max-batch-records <n>', 'records per delivery, 1 to 1000 (default 100)')
    .option('--max-retries <n>', 'retries of a failed batch before it goes to --dead-letter-topic (default: until delivered)')
    .option('--dead-letter-topic <topic>', 'an existing topic a batch that used up --max-retries is written to')
    .action(async (name: string, o: CreateOptions) => {
      const { t, json } = ctx();
      const endpoint = endpointOf(o);
      const maxBatchRecords = intOpt(o.maxBatchRecords, '--max-batch-records');
      const maxRetries = intOpt(o.maxRetries, '--max-retries');
      const created = await t.admin().createSubscription({
        name, topic: o.topic, groupId: o.group, endpoint,
        ...(o.startingPosition !== undefined ? { startingPosition: o.startingPosition } : {}),
        ...(o.isolationLevel !== undefined ? { isolationLevel: o.isolationLevel } : {}),
        ...(maxBatchRecords !== undefined ? { maxBatchRecords } : {}),
        ...(maxRetries !== undefined ? { maxRetries } : {}),
        ...(o.deadLetterTopic !== undefined ? { deadLetterTopic: o.deadLetterTopic } : {}),
      });
      if (json) return printJson(created);
      const { secret, ...subscription } = created;
      process.stderr.write(`Created: ${name}\n`);
      print([subscription]);
      process.stdout.write(`secret: ${secret}\n`);
      process.stderr.write('Store the secret now: it will not be shown again. Receivers check each delivery\'s signature with it (verifyWebhook).\n');
    });

  subs.command('list').description('every push subscription').action(async () => {
    const { t, json } = ctx();
    const all = (await t.admin().listSubscriptions()).sort((a, b) => a.name.localeCompare(b.name));
    if (json) return printJson(all);
    print(all);
  });

  subs.command('describe <name>').description('a push subscription, and each partition\'s committed offset, attempts and last error')
    .action(async (name: string) => {
      const { t, json } = ctx();
      const d = await t.admin().describeSubscription(name);
      if (json) return printJson(d);
      const { partitions: _partitions, ...subscription } = d;
      print([subscription]);
      printPartitions(d);
    });

  subs.command('delete <name>').description('delete a push subscription: its deliveries stop').action(async (name: string) => {
    const { t, json } = ctx();
    await t.admin().deleteSubscription(name);
    if (json) printJson({ subscription: name, deleted: true });
    else process.stderr.write(`Deleted: ${name}\n`);
  });
}
