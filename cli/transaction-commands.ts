/**
 * `tributary transactions list|describe|describe-producers|find-hanging|abort`: Kafka's
 * kafka-transactions.sh (KIP-664) — the transactional ids, one id's producer and open transaction,
 * a partition's producers, the partitions' hanging transactions (open although their coordinator
 * decided them: a marker an unclean election cut), and aborting an id's open transaction or
 * ending a partition's hanging one — as tables (or `--json`).
 */
import { Option, type Command } from 'commander';
import { TRANSACTION_STATES, type ProducerStateDescription, type TransactionDescription, type Tributary } from '../client/index.js';
import { intOpt } from './admin-commands.js';
import { printJson, printTable, UsageError } from './output.js';

type Ctx = () => { t: Tributary; json: boolean };

const partitionsOf = (d: TransactionDescription): string => d.topics.flatMap((t) => t.partitions.map((p) => `${t.topic}-${p}`)).join(' ');

/** One row per id: kafka-transactions.sh describe's columns, with the partitions and groups in the transaction. */
function print(rows: TransactionDescription[], now = Date.now()): void {
  printTable(
    ['transactional id', 'producer id', 'epoch', 'state', 'timeout ms', 'started', 'duration ms', 'partitions', 'groups'],
    rows.map((d) => [
      d.transactionalId, d.producerId, d.producerEpoch, d.state, d.transactionTimeoutMs,
      d.transactionStartTimeMs === null ? '' : new Date(d.transactionStartTimeMs).toISOString(),
      d.transactionStartTimeMs === null ? '' : Math.max(0, now - d.transactionStartTimeMs),
      partitionsOf(d), d.groups.join(' '),
    ]),
  );
}

/** One row per producer of each partition: kafka-transactions.sh describe-producers' columns. */
function printProducers(parts: { topic: string; partition: number; producers: ProducerStateDescription[] }[]): void {
  printTable(
    ['topic', 'partition', 'producer id', 'epoch', 'last sequence', 'transaction start offset', 'transactional id', 'hanging'],
    parts.flatMap((d) => d.producers.map((p) => [
      d.topic, d.partition, p.producerId, p.producerEpoch, p.lastSequence, p.currentTransactionStartOffset, p.transactionalId ?? '', p.hanging ? 'yes' : '',
    ])),
  );
}

export function transactionCommands(p: Command, ctx: Ctx): void {
  const txns = p.command('transactions').description('list and describe transactional ids; abort a hanging transaction');

  txns.command('list').description('every transactional id (those you may DESCRIBE), with its state')
    .addOption(new Option('--state <state...>', 'only ids in these states').choices(TRANSACTION_STATES))
    .action(async (o: { state?: string[] }) => {
      const { t, json } = ctx();
      const { transactions } = await t.admin().listTransactions(o.state ? { states: o.state as TransactionDescription['state'][] } : {});
      if (json) return printJson(transactions);
      print(transactions);
    });

  txns.command('describe <transactional-id>').description('the id\'s producer id and epoch, state, timeout, and its open transaction\'s partitions and groups')
    .action(async (id: string) => {
      const { t, json } = ctx();
      const [d] = (await t.admin().describeTransactions([id])).transactions;
      if (json) return printJson(d);
      if (d) print([d]);
    });

  txns.command('describe-producers').description('a partition\'s producers: epoch, last sequence, the offset their open transaction starts at, and whether it hangs')
    .requiredOption('--topic <topic>', 'the topic').requiredOption('--partition <n>', 'the partition')
    .action(async (o: { topic: string; partition: string }) => {
      const { t, json } = ctx();
      const [d] = await t.admin().describeProducers([{ topic: o.topic, partition: intOpt(o.partition, '--partition') as number }]);
      if (json) return printJson(d?.producers ?? []);
      printProducers(d ? [d] : []);
    });

  txns.command('find-hanging').description('transactions open on a topic\'s partitions although their coordinator decided them (their marker is missing)')
    .requiredOption('--topic <topic>', 'the topic').option('--partition <n>', 'only this partition')
    .action(async (o: { topic: string; partition?: string }) => {
      const { t, json } = ctx();
      const admin = t.admin();
      const partitions = o.partition !== undefined ? [intOpt(o.partition, '--partition') as number]
        : ((await admin.fetchTopicMetadata({ topics: [o.topic] })).topics[0]?.partitions ?? []).map((p) => p.partitionId);
      const found = (await admin.describeProducers(partitions.map((partition) => ({ topic: o.topic, partition }))))
        .map((d) => ({ ...d, producers: d.producers.filter((p) => p.hanging) }));
      if (json) return printJson(found.flatMap((d) => d.producers.map((p) => ({ topic: d.topic, partition: d.partition, ...p }))));
      printProducers(found);
    });

  txns.command('abort [transactional-id]')
    .description('abort the id\'s open transaction and fence its producer; or, with --topic and --partition, end that partition\'s hanging transactions with the markers their coordinator decided (read_committed readers move past them); needs CLUSTER ALTER')
    .option('--topic <topic>', 'a partition\'s hanging transactions: the topic')
    .option('--partition <n>', '... the partition')
    .option('--start-offset <offset>', '... only the one that starts at this offset')
    .option('--producer-id <id>', '... only this producer\'s')
    .action(async (id: string | undefined, o: { topic?: string; partition?: string; startOffset?: string; producerId?: string }) => {
      const { t, json } = ctx();
      if (o.topic !== undefined || o.partition !== undefined || o.startOffset !== undefined || o.producerId !== undefined) {
        const partition = intOpt(o.partition, '--partition');
        if (o.topic === undefined || partition === undefined || id !== undefined) throw new UsageError('Give a transactional id, or --topic and --partition (not both).');
        if (o.startOffset !== undefined && o.producerId !== undefined) throw new UsageError('Give --start-offset or --producer-id, not both.');
        const startOffset = intOpt(o.startOffset, '--start-offset');
        const producerId = intOpt(o.producerId, '--producer-id');
        const ended = await t.admin().endHangingTransactions({
          topic: o.topic, partition, ...(startOffset !== undefined ? { startOffset } : {}), ...(producerId !== undefined ? { producerId } : {}),
        });
        if (json) return printJson(ended);
        if (ended.length === 0) process.stderr.write(`No hanging transaction on ${o.topic}-${partition} (one its coordinator has not decided is aborted by its transactional id)\n`);
        else printTable(['topic', 'partition', 'producer id', 'start offset', 'marker', 'marker offset'], ended.map((e) => [e.topic, e.partition, e.producerId, e.startOffset, e.marker, e.markerOffset]));
        return;
      }
      if (id === undefined) throw new UsageError('Give a transactional id, or --topic and --partition.');
      const d = await t.admin().abortTransaction(id);
      if (json) return printJson(d);
      process.stderr.write(d.state === 'CompleteAbort' ? `Aborted: ${id}\n` : `No open transaction: ${id} is ${d.state}\n`);
      print([d]);
    });
}
