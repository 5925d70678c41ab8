/**
 * How the CLI answers: tables for people, JSON for scripts (`--json`), errors in one sentence that
 * starts with Kafka's error name, and exit codes scripts can trust.
 */
import Table from 'cli-table3';
import { TributaryConnectionError, TributaryError, TributaryProtocolError } from '../client/index.js';

/**
 * Exit codes: 0 done, 1 the cluster refused (a Kafka error), 2 bad usage, 3 the cluster did not
 * answer, 4 a schema is incompatible (`schemas check`: the answer, not a failure to get one).
 */
export const EXIT = { OK: 0, KAFKA_ERROR: 1, USAGE: 2, UNREACHABLE: 3, INCOMPATIBLE: 4 } as const;

export class UsageError extends Error {}

export function printTable(head: string[], rows: (string | number | null | undefined)[][]): void {
  const t = new Table({ head, style: { head: [], border: [] } });
  for (const r of rows) t.push(r.map((c) => (c === null || c === undefined ? '' : String(c))));
  process.stdout.write(`${t.toString()}\n`);
}

export const printJson = (v: unknown): void => { process.stdout.write(`${JSON.stringify(v)}\n`); };

/** One sentence on stderr and the exit code for `e`. */
export function fail(e: unknown): number {
  let code: number = EXIT.KAFKA_ERROR;
  let line: string;
  if (e instanceof TributaryProtocolError) {
    line = e.message.startsWith(e.type) ? e.message : `${e.type}: ${e.message}`;
  } else if (e instanceof TributaryConnectionError) {
    line = `NETWORK_EXCEPTION: ${e.message}`;
    code = EXIT.UNREACHABLE;
  } else if (e instanceof UsageError) {
    line = e.message;
    code = EXIT.USAGE;
  } else if (e instanceof TributaryError) {
    line = e.message;
  } else {
    line = `UNKNOWN_SERVER_ERROR: ${(e as Error)?.message ?? String(e)}`;
  }
  process.stderr.write(`tributary: ${line.replace(/\s+/g, ' ').trim()}\n`);
  return code;
}
