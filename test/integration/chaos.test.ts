/**
 * A short chaos run in every test run (issue 7): real faults on a private stack, the workload,
 * and the checker's verdict on the history — zero anomalies, and the cluster recovers after the
 * faults heal. `npm run chaos -- --duration 10m --seed N` runs the long version.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../lib/chaos/run.js';

describe('Chaos', () => {
  it('where a seeded mix of real faults hits the cluster under load, the history has no anomalies and the cluster recovers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-chaos-'));
    const s = await runChaos({ durationMs: 40_000, seed: 20261129, dir });
    const summary = `chaos: ${s.operations} operations, ${s.acknowledgedWrites} acknowledged, faults ${JSON.stringify(s.faults)}, ${s.failovers} failovers, recovery ${s.recoveryMs} ms, anomalies ${s.anomalies}`;
    process.stdout.write(`${summary}\n`);
    expect(s.report.anomalies, summary).toEqual([]);
    expect(s.recoveryMs).toBeGreaterThanOrEqual(0);
    expect(Object.values(s.faults).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3);
    expect(s.acknowledgedWrites).toBeGreaterThan(100);
    expect(s.report.counts.acknowledgedAll).toBeGreaterThan(20);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 300_000);
});
