/**
 * A full sync's claim whose answer was lost, against the real store on a private quiet stack: the
 * claim landed, the SDK sent it again, and the retry's condition failed on the claim the first
 * attempt made. That is this claim, not another's: `claimHead` says it holds it.
 */
import { describe, expect, it } from 'vitest';
import { claimHead } from '../../../lib/storage/replica/claims.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

describe('Function: claimHead, with its first answer lost', () => {
  it('returns true when the retry finds its own claim, and false for another claim', async () => {
    const p = await rf3Partition('lost-claim');
    const f = p.store(p.followers[0]!);
    let lost = 0;
    hookStoreClient(f.endpoint, 'deserialize', (next, context) => async (args) => {
      const input = args.input as { TableName?: string; UpdateExpression?: string };
      if (lost === 0 && String(context.commandName).includes('Update') && input.TableName === f.replicaTable && input.UpdateExpression?.startsWith('SET snapshotting')) {
        lost++;
        await next(args);
        throw Object.assign(new Error('socket timed out (answer lost by the test hook)'), { name: 'TimeoutError', $metadata: {} });
      }
      return next(args);
    });
    const at = Date.now();
    expect(await claimHead(f, p.tp, at)).toBe(true);
    expect(lost).toBe(1);
    expect((await readHead(f, p.tp))?.snapshotting).toBe(at);
    // Another claimer, at another time, finds the head claimed: false.
    expect(await claimHead(f, p.tp, at + 1)).toBe(false);
  });
});
