/**
 * Failover time with the fault tests' settings (test/integration/faults.test.ts: session timeout
 * 4000 ms, tick 500 ms, two controller processes, one DynamoDB Local per broker): SIGKILL of the
 * leader's store under acks=all producers, then the time until the partition state names a new
 * leader and until the next acknowledged write. The expectation is a new leader within the session
 * timeout plus a tick (plus a probe's slack); the tests check only that one is elected. Several
 * rounds, each killing the current leader and restarting the store afterwards.
 * Reported: from the store's SIGKILL to the first successful acks=all produce, p50 and max over
 * the rounds. Quick (a smoke form: the stores still start): one round, one controller process.
 * Run: `npm run bench -- failover`; results in bench/results/failover.{md,json,svg}.
 */
import { SESSION_MS, TICK_MS } from './lib/fault-settings.js';
import './lib/env.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { barChart, percentile, sized, writeResult } from './lib/report.js';
import { startLocalStack } from '../local/stack.js';

const SLACK_MS = 2500;
const ROUNDS = sized(5, 1);

interface Round { round: number; leader: number; newLeader: number; electedMs: number; firstAcksAllMs: number; failed: number }
const rounds: Round[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-failover-'));
const stack = await startLocalStack({ port: 0, brokers: 3, isolatedBrokers: true, dataDir: dir, controllers: sized(2, 1) });
const C = `/v3/clusters/${stack.clusterId}`;
const call = async (method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const r = await fetch(`${stack.url}${p}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text.split('\n')[0] as string) : undefined };
};
async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}
const partition = async () => (await call('GET', `${C}/topics/failover/partitions/0`)).body;

try {
  if ((await call('POST', `${C}/topics`, { topic_name: 'failover', partitions_count: 1, replication_factor: 3 })).status !== 201) throw new Error('could not create the topic');
  for (let round = 1; round <= ROUNDS; round++) {
    await until('every replica in the ISR', async () => (await partition()).isr?.length === 3, 60_000, 200);
    const before = await partition();
    let running = true;
    let acked = 0;
    let failed = 0;
    let firstAfterKill = 0;
    let killedAt = Number.POSITIVE_INFINITY;
    const producers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; running; i++) {
        const started = Date.now();
        const r = await call('POST', `${C}/topics/failover/records?acks=all`, { value: { type: 'STRING', data: `r${round}-w${w}-${i}` } }).catch(() => ({ status: 0 }));
        if (r.status !== 200) failed++;
        else {
          acked++;
          if (started > killedAt && !firstAfterKill) firstAfterKill = Date.now();
        }
      }
    });
    await until('some writes', async () => acked >= sized(40, 8), 30_000);
    killedAt = Date.now();
    await call('POST', `/local/processes/broker-${before.leader_id}/kill`);
    const elected = await until('a new leader', async () => {
      const p = await partition();
      return p.leader_id !== before.leader_id && p.leader_id !== null ? { p, at: Date.now() } : undefined;
    }, 60_000);
    await until('a write after the kill', async () => firstAfterKill > 0, 60_000);
    running = false;
    await Promise.all(producers);
    const electedMs = elected.at - killedAt;
    rounds.push({ round, leader: before.leader_id, newLeader: elected.p.leader_id, electedMs, firstAcksAllMs: firstAfterKill - killedAt, failed });
    if (round < ROUNDS) await call('POST', `/local/processes/broker-${before.leader_id}/restart`);
  }
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const elected = rounds.map((r) => r.electedMs);
const firstWrite = rounds.map((r) => r.firstAcksAllMs);
await writeResult({
  scenario: 'failover',
  title: 'Failover: from a leader store\'s SIGKILL to the first acks=all produce',
  description: `The fault tests' settings: broker.session.timeout.ms ${SESSION_MS}, tick ${TICK_MS} ms, probe timeout 1500 ms, two controller processes, one DynamoDB Local per broker (on disk), `
    + `4 acks=all producers over HTTP. Each round SIGKILLs the current leader's store, waits for a new leader and an acknowledged write, and restarts the store. `
    + `Expected: a new leader within the session timeout plus a tick (plus a probe's slack).`,
  tables: [
    {
      title: 'SIGKILL of the leader\'s store → ...',
      columns: ['', 'rounds', 'p50 ms', 'max ms'],
      rows: [
        ['new leader in the partition state', rounds.length, percentile(elected, 0.5), Math.max(...elected)],
        ['first successful acks=all produce', rounds.length, percentile(firstWrite, 0.5), Math.max(...firstWrite)],
      ],
    },
    {
      title: 'Rounds',
      columns: ['round', 'leader → new leader', 'elected after (ms)', 'first acks=all write after (ms)', `within ${SESSION_MS} + ${TICK_MS} + ${SLACK_MS} ms`, 'failed writes'],
      rows: rounds.map((r) => [r.round, `${r.leader} → ${r.newLeader}`, r.electedMs, r.firstAcksAllMs, r.electedMs < SESSION_MS + TICK_MS + SLACK_MS ? 'yes' : 'NO', r.failed]),
    },
  ],
  charts: [{
    title: 'Failover per round (ms after SIGKILL)',
    spec: barChart(rounds.flatMap((r) => [{ round: r.round, event: 'new leader', ms: r.electedMs }, { round: r.round, event: 'first acks=all produce', ms: r.firstAcksAllMs }]),
      { x: { field: 'round', type: 'ordinal' }, y: { field: 'ms', title: 'ms after SIGKILL' }, color: { field: 'event' } }),
  }],
  data: { sessionTimeoutMs: SESSION_MS, tickMs: TICK_MS, rounds },
});
