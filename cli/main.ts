#!/usr/bin/env node
/**
 * `tributary`: topics, produce, consume, groups, ACLs, transactions, push subscriptions, schemas,
 * the cluster, and `local` (the local cluster `npm start` runs), through the SDK.
 * `--url`/`TRIBUTARY_URL`, `--auth iam|token` (`--token` or `TRIBUTARY_TOKEN`, which alone also
 * mean token), tables by default and `--json` for scripts; exit codes in output.ts.
 */
import { Command, CommanderError, Option } from 'commander';
import { Tributary, type AuthConfig } from '../client/index.js';
import { consumeCommand } from './consume.js';
import { aclCommands } from './acl-commands.js';
import { adminCommands } from './admin-commands.js';
import { EXIT, fail, UsageError } from './output.js';
import { produceCommand } from './produce.js';
import { schemaCommands } from './schema-commands.js';
import { subscriptionCommands } from './subscription-commands.js';
import { transactionCommands } from './transaction-commands.js';
import { usersCommands } from './users.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

interface GlobalOptions { url?: string; auth?: string; token?: string; region?: string; json?: boolean }

function client(g: GlobalOptions): Tributary {
  const url = g.url ?? process.env.TRIBUTARY_URL ?? DEFAULT_URL;
  let auth: AuthConfig = { type: 'none' };
  // A token given (--token or TRIBUTARY_TOKEN) without --auth means --auth token.
  if (g.auth === 'token' || (g.auth === undefined && (g.token ?? process.env.TRIBUTARY_TOKEN))) {
    const token = g.token ?? process.env.TRIBUTARY_TOKEN;
    if (!token) throw new UsageError('--auth token needs --token or TRIBUTARY_TOKEN.');
    auth = { type: 'token', token };
  } else if (g.auth === 'iam') {
    const region = g.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
    if (!region) throw new UsageError('--auth iam needs --region or AWS_REGION.');
    auth = { type: 'iam', region };
  }
  return new Tributary({ url, auth });
}

export function program(): Command {
  const p = new Command('tributary')
    .description('Tributary: topics, produce, consume, groups and the cluster, over its HTTP API.')
    .option('--url <url>', `the cluster's HTTP API (env TRIBUTARY_URL; default ${DEFAULT_URL})`)
    .addOption(new Option('--auth <type>', 'how requests authenticate').choices(['none', 'iam', 'token']))
    .option('--token <token>', 'bearer token for --auth token (env TRIBUTARY_TOKEN)')
    .option('--region <region>', 'AWS region for --auth iam (env AWS_REGION)')
    .option('--json', 'JSON for scripts instead of tables')
    .showHelpAfterError()
    .exitOverride();
  const ctx = () => {
    const g = p.opts<GlobalOptions>();
    return { t: client(g), json: g.json ?? false };
  };

  p.command('produce <topic>')
    .description('send lines from stdin (or --file) as records')
    .option('--file <path>', 'read lines from a file instead of stdin')
    .option('--key-separator <sep>', 'each line is key<sep>value')
    .option('--acks <acks>', '0, 1 or all', 'all')
    .option('--partition <n>', 'send every record to this partition')
    .option('--format <format>', 'raw (a line is a value) or json ({"key","value","headers","partition","timestamp"} per line)', 'raw')
    .option('--linger-ms <ms>', 'how long records wait to share a request')
    .option('--no-progress', 'no progress bar, even on a terminal')
    .action(async (topic: string, o) => {
      const { t, json } = ctx();
      await produceCommand(t, topic, { ...o, json, ...(o.progress === false ? { progress: false } : { progress: undefined }) });
    });

  p.command('consume <topic>')
    .description('print records; without --follow, exit at the high watermark found at start')
    .option('--group <group>', 'read as a member of this consumer group (committing)')
    .option('--from-beginning', 'start at the earliest offset')
    .option('--offset <n>', 'start at this offset')
    .option('--timestamp <t>', 'start at the first record at or after this time (epoch ms or ISO 8601)')
    .option('--partition <n>', 'read only this partition')
    .option('--follow', 'keep reading new records until interrupted')
    .option('--max-messages <n>', 'stop after this many records')
    .option('--format <format>', "json, raw (each value alone on a line) or a template: %t %p %o %k %v %T %h", 'raw')
    .action(async (topic: string, o) => {
      const { t, json } = ctx();
      await consumeCommand(t, topic, { ...o, json });
    });

  adminCommands(p, ctx);
  aclCommands(p, ctx);
  transactionCommands(p, ctx);
  subscriptionCommands(p, ctx);
  schemaCommands(p, ctx);
  usersCommands(p, () => p.opts<GlobalOptions>().json ?? false);

  p.command('local')
    .description('start the local cluster (what `npm start` runs; from a checkout of tributary)')
    .allowUnknownOption()
    .helpOption(false)
    .argument('[args...]', 'options of the local cluster (--port, --brokers, --data-dir, ...)')
    .action(async (args: string[]) => {
      const { spawn } = await import('node:child_process');
      const { existsSync } = await import('node:fs');
      const { fileURLToPath } = await import('node:url');
      // cli/main.ts in a checkout, dist/package/cli/main.js when built.
      const main = ['../local/main.ts', '../../../local/main.ts'].map((r) => fileURLToPath(new URL(r, import.meta.url))).find((f) => existsSync(f));
      if (!main) throw new UsageError('tributary local runs from a checkout of tributary (the published package carries the SDK and CLI only): git clone, npm ci, npm start.');
      const root = fileURLToPath(new URL('..', `file://${main}`));
      const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: 'inherit', cwd: root });
      for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
      const code = await new Promise<number>((r) => child.on('exit', (c) => r(c ?? 0)));
      process.exitCode = code;
    });
  return p;
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await program().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.OK;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version are not errors; commander printed the usage error already.
      return e.exitCode === 0 || e.code === 'commander.helpDisplayed' || e.code === 'commander.help' ? EXIT.OK : EXIT.USAGE;
    }
    return fail(e);
  }
}

// A reader that went away (`consume ... | head -3`) ends the run quietly, as it ends `cat`.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});
const code = await main();
// Exit only once stdout is flushed: a pipe's writes are asynchronous, and process.exit() with
// output still queued cut `consume`'s output short (9,627 of 10,000 lines in a test run).
process.stdout.write('', () => process.exit(code));
