/**
 * What consumer groups cost in DynamoDB: a steady-state heartbeat, a commit (1 and 6 partitions),
 * and a REST consumer poll, counted with ReturnConsumedCapacity on the local stack.
 * Quick: a few repetitions of each. Run: `npm run bench -- groups`; results in bench/results/groups.{md,json,svg}.
 */
import './lib/env.js';
import { barChart, byOperation, sized, totalRequests, writeResult } from './lib/report.js';
import { counted } from './lib/capacity.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { createTopic } from '../lib/cluster/topics.js';
import { produce } from '../lib/log/produce.js';
import * as groups from '../lib/groups/coordinator.js';
import * as rest from '../lib/groups/rest-consumer.js';

// No stream replicator: its background reads would be counted as the operations' (produce uses acks=all, which replicates inline).
const stack = await startQuietStack();
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const data: Record<string, unknown>[] = [];
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
  const c = await counted(async () => {
    for (let i = 0; i < n; i++) await fn(i);
  });
  const reqs = totalRequests(c.requests) / n;
  rows.push([what, reqs, byOperation(c.requests, n), c.readUnits / n, c.writeUnits / n, c.billedWriteUnits / n]);
  data.push({ operation: what, repetitions: n, requests: reqs, byOperation: c.requests, readUnits: c.readUnits / n, writeUnits: c.writeUnits / n, billedWriteUnits: c.billedWriteUnits / n });
  points.push({ operation: what, measure: 'requests', value: reqs }, { operation: what, measure: 'read units', value: c.readUnits / n }, { operation: what, measure: 'write units (billed)', value: c.billedWriteUnits / n });
};
const N = sized(20, 3);
let m0 = members[0]!;
await measure('steady-state heartbeat (3 members, 6 partitions)', N, async () => {
  m0 = await groups.heartbeat('bench', { memberId: m0.memberId, memberEpoch: m0.memberEpoch, owned: owned(m0) });
});
let offset = 1;
await measure('commit of 1 partition', N, () => groups.commit('bench', [{ ...m0.assignment[0]!, offset: offset++ }], { memberId: m0.memberId, memberEpoch: m0.memberEpoch }));
const all = await groups.heartbeat('solo', { memberEpoch: 0, subscription: { topics: ['g-topic'] } });
let o6 = 1;
await measure('commit of 6 partitions', N, () => groups.commit('solo', all.assignment.map((tp) => ({ ...tp, offset: o6 })), { memberId: all.memberId, memberEpoch: all.memberEpoch }).then(() => o6++));
await rest.createInstance('rest-bench', 'r1', { format: 'binary', autoOffsetReset: 'earliest', autoCommit: true, fetchMinBytes: -1, requestTimeoutMs: 0, sessionTimeoutMs: 45_000 });
await rest.subscribe('rest-bench', 'r1', { topics: ['g-topic'] });
await rest.poll('rest-bench', 'r1', { timeoutMs: 0, maxBytes: 1_000_000 });
await measure('REST v2 poll with nothing new (6 partitions, auto-commit)', sized(10, 2), () => rest.poll('rest-bench', 'r1', { timeoutMs: 0, maxBytes: 1_000_000 }));
await stack.stop();

await writeResult({
  scenario: 'groups',
  title: 'What consumer groups cost in DynamoDB',
  description: 'Per operation, on the local stack (in-memory DynamoDB Local, 3 brokers): a steady-state heartbeat of a stable 3-member group on a 6-partition topic, '
    + 'an offset commit of 1 and of 6 partitions, and a REST v2 consumer poll that finds nothing new. Units as DynamoDB Local reports them (ReturnConsumedCapacity), '
    + 'and write units as DynamoDB bills them (the larger of each item before and after, lib/storage/capacity.ts).',
  tables: [{ title: 'Per operation', columns: ['operation', 'requests', 'by operation', 'read units (reported)', 'write units (reported)', 'write units (billed)'], rows }],
  charts: [{ title: 'DynamoDB requests and units per group operation', spec: barChart(points, { x: { field: 'operation', title: null }, y: { field: 'value', title: 'per operation' }, color: { field: 'measure' } }) }],
  data,
});
