/**
 * `tributary transactions list|describe|abort`: Kafka's kafka-transactions.sh (KIP-664) — the
 * transactional ids, one id's producer and open transaction, and aborting a hanging transaction
 * (its producer went away and it holds back every read_committed reader) — as tables (or `--json`).
 */
import { Option, type Command } from 'commander';
import { TRANSACTION_STATES, type TransactionDescription, type Tributary } from '../client/index.js';
import { printJson, printTable } from './output.js';

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

  txns.command('abort <transactional-id>')
    .description('abort the id\'s open transaction and fence its producer (read_committed readers move past it); needs CLUSTER ALTER')
    .action(async (id: string) => {
      const { t, json } = ctx();
      const d = await t.admin().abortTransaction(id);
      if (json) return printJson(d);
      process.stderr.write(d.state === 'CompleteAbort' ? `Aborted: ${id}\n` : `No open transaction: ${id} is ${d.state}\n`);
      print([d]);
    });
}
