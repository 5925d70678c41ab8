/**
 * What consumer groups cost in DynamoDB: a steady-state heartbeat, a commit (1 and 6 partitions),
 * and a REST consumer poll, counted with ReturnConsumedCapacity on the local stack.
 * Run: `npm run bench -- groups`; results in bench/results/groups.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../lib/local/stack.js');
const { takeCapacity, trackCapacity } = await import('../lib/storage/capacity.js');
const { createTopic } = await import('../lib/cluster/topics.js');
const { produce } = await import('../lib/log/produce.js');
const groups = await import('../lib/groups/coordinator.js');
const rest = await import('../lib/groups/rest-consumer.js');

const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, controllers: 0 });
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  process.stdout.write(`${s}\n`);
};
await createTopic({ name: 'g-topic', partitions: 6, replicationFactor: 3 });
await produce('g-topic', Array.from({ length: 60 }, (_, i) => ({ partition: i % 6, key: null, value: Buffer.from(`v${i}`), headers: [] })));

// Three native members, heartbeating as clients do (latest epoch, owned = what they were given) until stable.
const owned = (r: { assignment: readonly { topic: string; partition: number }[] }) => r.assignment.map((tp) => `${tp.topic}#${tp.partition}`);
let members = await Promise.all([0, 1, 2].map(() => groups.heartbeat('bench', { memberEpoch: 0, subscription: { topics: ['g-topic'] } })));
for (let round = 0; round < 5; round++) {
  const next = [];
  for (const m of members) next.push(await groups.heartbeat('bench', { memberId: m.memberId, memberEpoch: m.memberEpoch, owned: owned(m) }));
  members = next;
}
if ((await groups.describeGroup('bench')).state !== 'Stable') throw new Error('group did not settle');
const measure = async (what: string, n: number, fn: (i: number) => Promise<unknown>) => {
  trackCapacity(true);
  takeCapacity();
  for (let i = 0; i < n; i++) await fn(i);
  const c = takeCapacity();
  trackCapacity(false);
  const reqs = Object.values(c.requests).reduce((a, b) => a + b, 0) / n;
  out(`| ${what} | ${reqs.toFixed(1)} | ${Object.entries(c.requests).map(([k, v]) => `${k} ${(v / n).toFixed(1)}`).join(', ')} | ${(c.readUnits / n).toFixed(1)} | ${(c.writeUnits / n).toFixed(1)} | ${(c.billedWriteUnits / n).toFixed(1)} |`);
};
out('| operation | requests | by operation | read units (reported) | write units (reported) | write units (billed by size) |');
out('|---|---|---|---|---|---|');
let m0 = members[0]!;
await measure('steady-state heartbeat (3 members, 6 partitions)', 20, async () => {
  m0 = await groups.heartbeat('bench', { memberId: m0.memberId, memberEpoch: m0.memberEpoch, owned: owned(m0) });
});
let offset = 1;
await measure('commit of 1 partition', 20, () => groups.commit('bench', [{ ...m0.assignment[0]!, offset: offset++ }], { memberId: m0.memberId, memberEpoch: m0.memberEpoch }));
const all = await groups.heartbeat('solo', { memberEpoch: 0, subscription: { topics: ['g-topic'] } });
let o6 = 1;
await measure('commit of 6 partitions', 20, () => groups.commit('solo', all.assignment.map((tp) => ({ ...tp, offset: o6 })), { memberId: all.memberId, memberEpoch: all.memberEpoch }).then(() => o6++));
await rest.createInstance('rest-bench', 'r1', { format: 'binary', autoOffsetReset: 'earliest', autoCommit: true, fetchMinBytes: -1, requestTimeoutMs: 0, sessionTimeoutMs: 45_000 });
await rest.subscribe('rest-bench', 'r1', { topics: ['g-topic'] });
await rest.poll('rest-bench', 'r1', { timeoutMs: 0, maxBytes: 1_000_000 });
await measure('REST v2 poll with nothing new (6 partitions, auto-commit)', 10, () => rest.poll('rest-bench', 'r1', { timeoutMs: 0, maxBytes: 1_000_000 }));
await stack.stop();

const header = `# groups — ${new Date().toISOString()}\n\nLocal stack (in-memory DynamoDB Local), per operation, counted with ReturnConsumedCapacity. Node ${process.version}, ${os.cpus().length} cores.\n\n`;
fs.writeFileSync(path.join(import.meta.dirname, 'results', 'groups.md'), `${header}${lines.join('\n')}\n`);
