/**
 * How long each assignor takes for a large group: 1,000 members × 10,000 partitions (100 topics of
 * 100), with identical and with mixed subscriptions, and a second round where every member owns
 * what the first gave it (the sticky path). The budget is one second per assignment (the old test's
 * bound). Pure CPU, no stack. Quick: 100 members × 1,000 partitions, one run each.
 * Run: `npm run bench -- assignors`; results in bench/results/assignors.{md,json,svg}.
 */
import { ASSIGNORS, assign, type AssignorMember } from '../lib/groups/assignors.js';
import { barChart, percentile, sized, writeResult } from './lib/report.js';

const BUDGET_MS = 1000;
const RUNS = sized(5, 1);
const MEMBERS = sized(1000, 100);
const TOPICS = sized(100, 10);

const ppt = Object.fromEntries(Array.from({ length: TOPICS }, (_, t) => [`topic-${String(t).padStart(3, '0')}`, 100]));
const topics = Object.keys(ppt);
const same: AssignorMember[] = Array.from({ length: MEMBERS }, (_, i) => ({ memberId: `member-${i}`, topics }));
const mixed: AssignorMember[] = same.map((m, i) => ({ ...m, topics: topics.filter((_, t) => (i * 7 + t * 13) % 5 < 2 || t === i % TOPICS) }));

const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
let over = 0;
for (const name of ASSIGNORS) {
  for (const [label, members] of [['identical', same], ['mixed', mixed]] as const) {
    const first = assign(name, members, ppt); // warm-up, and the owned partitions of the second round
    const owning = members.map((m) => ({ ...m, owned: first.get(m.memberId) ?? [] }));
    for (const [round, input] of [['first', members], ['members own their last assignment', owning]] as const) {
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const started = performance.now();
        assign(name, input, ppt);
        times.push(performance.now() - started);
      }
      const max = Math.max(...times);
      if (max >= BUDGET_MS) over++;
      rows.push([name, label, round, Math.round(percentile(times, 0.5)), Math.round(max), max < BUDGET_MS ? 'yes' : 'NO']);
      points.push({ case: `${name}, ${round === 'first' ? 'first round' : 'sticky round'}`, subscriptions: label, ms: Math.round(percentile(times, 0.5)) });
    }
  }
}

await writeResult({
  scenario: 'assignors',
  title: 'Assignor time for a large group',
  description: `${MEMBERS.toLocaleString('en-US')} members × ${(TOPICS * 100).toLocaleString('en-US')} partitions (${TOPICS} topics × 100), identical and mixed subscriptions; the second round has every member own what the first gave it. Pure CPU, no stack. Budget: ${BUDGET_MS} ms per assignment.`,
  tables: [{
    title: 'Time per assignment',
    columns: ['assignor', 'subscriptions', 'round', 'median ms', `max ms (${RUNS} runs)`, `within ${BUDGET_MS} ms`],
    rows,
    notes: [over === 0 ? `Every assignment finished within ${BUDGET_MS} ms.` : `${over} scenario(s) exceeded ${BUDGET_MS} ms.`],
  }],
  charts: [{ title: 'Median ms per assignment', spec: barChart(points, { x: { field: 'case', title: null }, y: { field: 'ms', title: 'median ms' }, color: { field: 'subscriptions' } }) }],
  data: { members: MEMBERS, partitions: TOPICS * 100, runs: RUNS, budgetMs: BUDGET_MS, rows },
});
