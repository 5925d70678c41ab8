/**
 * How long each assignor takes for a large group: 1,000 members × 10,000 partitions (100 topics of
 * 100), with identical and with mixed subscriptions, and a second round where every member owns
 * what the first gave it (the sticky path). The budget is one second per assignment (the old test's
 * bound). Pure CPU, no stack. Run: `npm run bench -- assignors`; results in bench/results/assignors.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ASSIGNORS, assign, type AssignorMember } from '../lib/groups/assignors.js';

const BUDGET_MS = 1000;
const RUNS = 5;
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  process.stdout.write(`${s}\n`);
};

const ppt = Object.fromEntries(Array.from({ length: 100 }, (_, t) => [`topic-${String(t).padStart(3, '0')}`, 100]));
const topics = Object.keys(ppt);
const same: AssignorMember[] = Array.from({ length: 1000 }, (_, i) => ({ memberId: `member-${i}`, topics }));
const mixed: AssignorMember[] = same.map((m, i) => ({ ...m, topics: topics.filter((_, t) => (i * 7 + t * 13) % 5 < 2 || t === i % 100) }));

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;

out(`| assignor | subscriptions | round | median ms | max ms (${RUNS} runs) | within ${BUDGET_MS} ms |`);
out('|---|---|---|---|---|---|');
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
      out(`| ${name} | ${label} | ${round} | ${pct(times, 0.5).toFixed(0)} | ${max.toFixed(0)} | ${max < BUDGET_MS ? 'yes' : 'NO'} |`);
    }
  }
}
out('');
out(over === 0 ? `Every assignment finished within ${BUDGET_MS} ms.` : `${over} scenario(s) exceeded ${BUDGET_MS} ms.`);

const header = `# assignors — ${new Date().toISOString()}\n\n1,000 members × 10,000 partitions (100 topics × 100). Node ${process.version}, ${os.cpus().length} cores.\n\n`;
fs.writeFileSync(path.join(import.meta.dirname, 'results', 'assignors.md'), `${header}${lines.join('\n')}\n`);
