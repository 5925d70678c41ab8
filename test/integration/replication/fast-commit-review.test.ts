/**
 * Review of the acks=all fast commit and the one-round-trip fetch: interleavings
 * that break an invariant, each driven deterministically on a private quiet stack. A store call is
 * held at a gate (an SDK middleware on the shared client: the request is not sent until released),
 * the steps of the race run meanwhile, then the call goes on.
 */
import { describe, expect, it } from 'vitest';
import { fetchRecords } from '../../../lib/log/read.js';
import { replicate } from '../../../lib/log/commit.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { advanceHighWatermark, copyBatches } from '../../../lib/storage/replica/batches.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { truncateLog } from '../../../lib/storage/replica/truncation.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();

const setup = () => rf3Partition('fast-review');
let gates = 0;

/**
 * Holds the next GetItem of `store`'s head of `tp` until `release()`; `queried` resolves when a
 * Query of that table has been answered. (Only the first head read after arming is held.)
 */
function gateHeadRead(store: ReplicaStoreRef, tp: string) {
  const client = dynamo(store.endpoint);
  const name = `review-gate-${gates++}`;
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; });
  let held!: () => void;
  const headHeld = new Promise<void>((r) => { held = r; });
  let answered!: () => void;
  const queried = new Promise<void>((r) => { answered = r; });
  let armed = true;
  const about = (input: unknown) => JSON.stringify(input ?? {});
  client.middlewareStack.add((next, context) => async (args) => {
    const text = about(args.input);
    const mine = text.includes(store.replicaTable) && text.includes(tp);
    if (mine && armed && /^Get(Item)?Command$/.test(context.commandName ?? '')) {
      armed = false;
      held();
      await released;
      return next(args);
    }
    const out = await next(args);
    if (mine && /^Query(Command)?$/.test((context.commandName ?? '').replace(/Command$/, '') ) ) answered();
    return out;
  }, { step: 'initialize', name });
  return { release, headHeld, queried, remove: () => client.middlewareStack.remove(name) };
}

describe('Review: the fetch that reads its head and its batches together', () => {
  it('where the Query is answered before the head, and the replica was truncated and re-elected in between, the fetch must not return the record the truncation removed', async () => {
    const { name, p0, tp, store, followers, send } = await setup();
    const a = p0.leader;
    const b = followers[0]!;
    const c = followers[1]!;
    expect((await send(['a']))[0]).toMatchObject({ ok: true, offset: 0 });
    // 'x' is on A only: appended, never committed (hw stays 1).
    expect((await send(['x'], { acks: 1 }))[0]).toMatchObject({ ok: true, offset: 1 });
    expect((await readHead(store(a), tp))).toMatchObject({ leo: 2, hw: 1 });

    // A consumer fetches from offset 0 (below the high watermark this instance saw, so the Query
    // goes with the head) from A: its Query is answered (it sees 'a' and 'x'), its head read is slow.
    const gate = gateHeadRead(store(a), tp);
    let fetched: Awaited<ReturnType<typeof fetchRecords>> | undefined;
    try {
      const fetching = fetchRecords({ leader: store(a), tp, partition: 0 }, { offset: 0, maxBytes: 1_000_000, maxWaitMs: 0 });
      await Promise.all([gate.queried, gate.headHeld]);

      // Meanwhile: B is elected (a clean election: A is in the ISR, and 'x' was never committed),
      // A follows it — truncating 'x' — and 'y' is acknowledged at offset 1 on every replica.
      const second = await electLeader(name, 0, b);
      await setRole(store(b), tp, 'leader', second.leaderEpoch, second.isr);
      await setRole(store(a), tp, 'follower', second.leaderEpoch);
      await setRole(store(c), tp, 'follower', second.leaderEpoch);
      expect((await send(['y'], { deadlineMs: 5_000 }))[0]).toMatchObject({ ok: true, offset: 1 });
      expect((await send(['z'], { deadlineMs: 5_000 }))[0]).toMatchObject({ ok: true, offset: 2 });
      expect((await readHead(store(a), tp))).toMatchObject({ leo: 3 });
      expect((await readHead(store(a), tp))!.hw).toBeGreaterThanOrEqual(2);
      // A is the preferred leader again.
      const third = await electLeader(name, 0, a);
      await setRole(store(a), tp, 'leader', third.leaderEpoch, third.isr);
      await setRole(store(b), tp, 'follower', third.leaderEpoch);

      gate.release();
      fetched = await fetching;
    } finally {
      gate.release();
      gate.remove();
    }
    // Offset 1 is 'y' — acknowledged, on every replica — never 'x'.
    expect(fetched!.records.find((r) => r.offset === 1)?.value?.toString()).toBe('y');
  });
});

describe('Review: the fast commit trusts a follower log end it did not learn under this epoch', () => {
  it('where the leader\'s recorded progress for a follower is left from an earlier leadership, the commit must still write that follower before the high watermark covers the records', async () => {
    const { name, topic, p0, tp, store, followers, send } = await setup();
    const a = p0.leader;
    const b = followers[0]!;
    const c = followers[1]!;
    const opts = { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 };
    // Epoch 1, A leads: 'a' committed everywhere; 'x1..x3' (offsets 1-3) appended, then a replicator
    // copies them to C but not to B (B's store is slow), and records that progress: hw stays 1.
    expect((await send(['a']))[0]).toMatchObject({ ok: true, offset: 0 });
    expect((await send(['x1', 'x2', 'x3'], { acks: 1 }))[0]).toMatchObject({ ok: true, offset: 1 });
    const e1 = (await readHead(store(a), tp))!;
    const xs = await queryBatches(store(a), tp, { fromOffset: 1, toOffset: 3, maxBytes: 1_000_000 });
    await copyBatches(store(c), tp, { expectLeo: 1, leaderEpoch: e1.leaderEpoch, batches: xs, hw: 1, epochEntries: [] });
    expect(await advanceHighWatermark(store(a), tp, e1.leaderEpoch, 1, { [String(b)]: { leo: 1, caughtUpAt: Date.now() }, [String(c)]: { leo: 4, caughtUpAt: Date.now() } }, e1.isrVersion)).toBe(true);

    // Epoch 2, B leads (clean: B is in the ISR, x1..x3 were never committed): A and C truncate to 1.
    const second = await electLeader(name, 0, b);
    await setRole(store(b), tp, 'leader', second.leaderEpoch, second.isr);
    await setRole(store(a), tp, 'follower', second.leaderEpoch);
    await setRole(store(c), tp, 'follower', second.leaderEpoch);
    await replicate(name, topic.topicId, 0, opts);
    expect((await readHead(store(c), tp))?.leo).toBe(1);

    // Epoch 3, A leads again (preferred leader). A replicate run reconciles B and C with it (nothing
    // to truncate: both end at 1) and stops before it writes A's head (a Lambda timeout): A's
    // recorded progress is still epoch 1's, C at 4.
    const third = await electLeader(name, 0, a);
    await setRole(store(a), tp, 'leader', third.leaderEpoch, third.isr);
    await setRole(store(b), tp, 'follower', third.leaderEpoch);
    await setRole(store(c), tp, 'follower', third.leaderEpoch);
    for (const f of [b, c]) {
      const h = (await readHead(store(f), tp))!;
      await truncateLog(store(f), tp, h, h.leo);
    }
    expect((await readHead(store(a), tp))).toMatchObject({ leo: 1, hw: 1, followers: { [String(c)]: { leo: 4 } } });

    // acks=all of three records at 1-3: the log end (4) equals C's progress left from epoch 1.
    const out = await send(['p1', 'p2', 'p3'], { deadlineMs: 5_000 });
    expect(out[0]).toMatchObject({ ok: true, offset: 1 });
    const hw = (await readHead(store(a), tp))!.hw;
    // Acknowledged: every ISR member holds everything below the high watermark.
    for (const f of [b, c]) expect((await readHead(store(f), tp))!.leo).toBeGreaterThanOrEqual(hw);
  });
});
