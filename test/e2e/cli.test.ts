/**
 * The `tributary` CLI end to end against the shared local stack, run as a user runs it (a child
 * process): 10,000 lines through `produce` and back through `consume --from-beginning`, `--json`
 * answers parsed, and exit codes scripts can trust.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useCli } from '../support/cli.js';
import { baseUrl, createTopic, uniqueTopic } from '../support/api.js';
import { Tributary } from '../../client/index.js';

const cli = useCli();

describe('tributary produce and consume', () => {
  it('pipes 10,000 lines through produce and reads the same 10,000 back with consume --from-beginning', async () => {
    const topic = uniqueTopic('cli-10k');
    await createTopic(topic, 3, 3);
    const lines = Array.from({ length: 10_000 }, (_, i) => `key-${i % 97}\tline ${i} ${'x'.repeat(i % 50)}`);
    const produced = await cli(['--json', 'produce', topic, '--key-separator', '\t'], `${lines.join('\n')}\n`);
    expect(produced.code, produced.stderr).toBe(0);
    const summary = JSON.parse(produced.stdout);
    expect(summary.records).toBe(10_000);
    expect(Object.values(summary.partitions as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(10_000);
    // Batched: far fewer requests than records.
    expect(summary.requests).toBeLessThan(100);

    const t = new Tributary({ url: baseUrl() });
    const highs = await Promise.all([0, 1, 2].map(async (p) => (await t.connection.listOffset(topic, p, 'latest')).high));
    expect(highs.reduce((a, b) => a + b, 0)).toBe(10_000);
    const raw = await cli(['consume', topic, '--from-beginning']);
    expect(raw.code, raw.stderr).toBe(0);
    const values = raw.stdout.split('\n').filter((l) => l !== '');
    expect(values.sort()).toEqual(lines.map((l) => l.slice(l.indexOf('\t') + 1)).sort());

    const json = await cli(['consume', topic, '--from-beginning', '--format', 'json', '--partition', '0', '--max-messages', '5']);
    const records = json.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4]);
    expect(records[0]).toMatchObject({ topic, partition: 0, key: expect.stringMatching(/^key-\d+$/), value: expect.stringMatching(/^line \d+/) });

    const template = await cli(['consume', topic, '--offset', '3', '--partition', '1', '--format', '%p:%o %k', '--max-messages', '1']);
    expect(template.stdout).toMatch(/^1:3 key-\d+\n$/);
  });

  it('reads as a group member and leaves the group caught up (lag 0)', async () => {
    const topic = uniqueTopic('cli-group');
    await createTopic(topic, 2, 1);
    expect((await cli(['produce', topic], 'a\nb\nc\nd\n')).code).toBe(0);
    const group = uniqueTopic('cli-group-g');
    const out = await cli(['consume', topic, '--group', group, '--from-beginning']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.split('\n').filter(Boolean).sort()).toEqual(['a', 'b', 'c', 'd']);
    const lag = JSON.parse((await cli(['--json', 'groups', 'lag', group])).stdout);
    expect(lag.reduce((s: number, l: { lag: number }) => s + l.lag, 0)).toBe(0);
  });
});

describe('tributary consume into a reader that stops early', () => {
  it('ends quietly with exit code 0 when its reader closes the pipe (`| head -1`)', async () => {
    const topic = uniqueTopic('cli-head');
    await createTopic(topic, 1, 1);
    expect((await cli(['produce', topic], `${Array.from({ length: 2000 }, (_, i) => `line ${i} ${'y'.repeat(200)}`).join('\n')}\n`)).code).toBe(0);
    const child = spawn(process.execPath, [cli.main, '--url', baseUrl(), 'consume', topic, '--from-beginning'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    const first = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
    child.stdout.destroy(); // as `head -1` does once it has its line
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
    expect(first).toMatch(/^line 0 /);
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|Error/);
  });
});

describe('tributary admin commands', () => {
  it('creates, describes, alters, lists and deletes a topic, and shows the cluster, as JSON', async () => {
    const topic = uniqueTopic('cli-admin');
    expect((await cli(['--json', 'topics', 'create', topic, '--partitions', '2', '--config', 'retention.ms=3600000'])).code).toBe(0);
    expect(JSON.parse((await cli(['--json', 'topics', 'list'])).stdout)).toContain(topic);
    expect((await cli(['topics', 'alter', topic, '--partitions', '3'])).code).toBe(0);
    const described = JSON.parse((await cli(['--json', 'topics', 'describe', topic])).stdout);
    expect(described.partitions).toHaveLength(3);
    expect(described.configs).toContainEqual({ name: 'retention.ms', value: '3600000' });
    const cluster = JSON.parse((await cli(['--json', 'cluster'])).stdout);
    expect(cluster.brokers.map((b: { nodeId: number }) => b.nodeId).sort()).toEqual([1, 2, 3]);
    expect(cluster.brokers.every((b: { partitions: number }) => b.partitions > 0)).toBe(true);
    const table = await cli(['cluster']);
    expect(table.stdout).toMatch(/broker.*partitions.*leaders/);
    expect((await cli(['topics', 'delete', topic])).code).toBe(0);
  });

  it('exits 1 with the Kafka error name for what the cluster refuses, 2 for bad usage, 3 when nothing answers', async () => {
    const missing = await cli(['topics', 'describe', uniqueTopic('cli-none')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^tributary: UNKNOWN_TOPIC_OR_PARTITION: .*\n$/);
    const dup = uniqueTopic('cli-dup');
    await createTopic(dup, 1, 1);
    const exists = await cli(['topics', 'create', dup]);
    expect(exists.code).toBe(1);
    expect(exists.stderr).toMatch(/TOPIC_ALREADY_EXISTS/);
    expect((await cli(['produce', dup, '--acks', '2'], 'x\n')).stderr).toMatch(/INVALID_REQUIRED_ACKS/);
    expect((await cli(['consume'])).code).toBe(2);
    const down = await cli(['--url', 'http://127.0.0.1:9', 'topics', 'list']);
    expect(down.code).toBe(3);
  });
});
