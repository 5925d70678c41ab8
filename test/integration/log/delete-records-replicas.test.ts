/**
 * DeleteRecords and the followers' log start, against the real stores on a private quiet stack:
 * DeleteRecords answers only once every replica of the ISR no longer serves what it deleted (as
 * Kafka answers with the low watermark), a follower that missed a raise takes the leader's log
 * start when it next copies, and a full sync never installs an older log start than the one a
 * DeleteRecords gave the follower while it ran.
 */
import { describe, expect, it } from 'vitest';
import { copyStep } from '../../../lib/log/copy.js';
import { fullSync } from '../../../lib/log/full-sync.js';
import { deleteRecords } from '../../../lib/log/retention.js';
import { isKafkaError } from '../../../lib/errors.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

/** Fails the next `count` log start raises on `table` as a store that does not answer would. */
function failRaises(endpoint: string | undefined, table: string, count: number): () => number {
  let failed = 0;
  hookStoreClient(endpoint, 'initialize', (next, context) => async (args) => {
    const input = args.input as { TableName?: string; UpdateExpression?: string };
    if (String(context.commandName).includes('Update') && input.TableName === table && input.UpdateExpression?.includes('logStartOffset = :o') && failed < count) {
      failed++;
      throw Object.assign(new Error('connect ECONNREFUSED (refused by the test hook)'), { code: 'ECONNREFUSED', $metadata: {} });
    }
    return next(args);
  });
  return () => failed;
}

async function fiveRecords() {
  const p = await rf3Partition('del-replicas');
  const out = await p.send(['r0', 'r1', 'r2', 'r3', 'r4']);
  expect(out.every((o) => o.ok)).toBe(true);
  const [f, g] = p.followers as [number, number];
  return { ...p, f, g };
}

describe('Function: deleteRecords, with an ISR follower whose store does not answer', () => {
  it('does not answer until every replica of the ISR raised its log start; a retry does, and then every one has', async () => {
    const p = await fiveRecords();
    const failures = failRaises(p.store(p.f).endpoint, p.store(p.f).replicaTable, 1);
    const first = await deleteRecords(p.name, 0, 3).then((r) => r, (err: unknown) => err);
    expect(failures()).toBe(1);
    expect(isKafkaError(first, 'REQUEST_TIMED_OUT'), String(first)).toBe(true);
    expect(await deleteRecords(p.name, 0, 3)).toEqual({ lowWatermark: 3 });
    for (const b of p.p0.replicas) expect((await readHead(p.store(b), p.tp))?.logStartOffset, `broker ${b}`).toBe(3);
  });

  it('where a follower missed the raise, it takes the leader\'s log start when it next copies', async () => {
    const p = await fiveRecords();
    failRaises(p.store(p.f).endpoint, p.store(p.f).replicaTable, 1);
    await deleteRecords(p.name, 0, 3).catch(() => undefined);
    expect((await readHead(p.store(p.f), p.tp))?.logStartOffset).toBe(0);
    expect((await copyStep(p.store(p.p0.leader), p.store(p.f), p.tp)).kind).toBe('caught-up');
    expect((await readHead(p.store(p.f), p.tp))?.logStartOffset).toBe(3);
  });
});

describe('Function: fullSync, while a DeleteRecords runs', () => {
  it('keeps the log start the DeleteRecords gave the follower, over the older one its snapshot holds', async () => {
    const p = await fiveRecords();
    let deleted = false;
    const synced = await fullSync(p.store(p.p0.leader), p.store(p.f), p.tp, {
      onStep: async (s) => {
        // After the snapshot read the leader's head (log start 0): the records below 3 go.
        if (s.phase === 'build' && !deleted) {
          deleted = true;
          expect(await deleteRecords(p.name, 0, 3)).toEqual({ lowWatermark: 3 });
        }
      },
    });
    expect(synced).toBe(true);
    expect(deleted).toBe(true);
    expect((await readHead(p.store(p.f), p.tp))?.logStartOffset).toBe(3);
  });
});
