/**
 * Transactions over HTTP against the shared stack: a transactional producer's records are seen by
 * read_committed readers all at once when it commits and never when it aborts; readers never go
 * past the last stable offset and never get a marker; the last stable offset is shown by ListOffsets at
 * read_committed, the partition and the group's lag; a new init fences the old producer (its
 * calls fail PRODUCER_FENCED, its open transaction is aborted); a produce retried after its
 * transaction ended joins no later one; offsets sent in a transaction are committed only if it
 * commits; a transaction past its timeout is aborted by the controller's pass.
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { end, init, send } from '../support/transactions.js';

async function read(topic: string, partition: number, isolation: 'read_committed' | 'read_uncommitted', offset = 0) {
  const r = await call('GET', v3(`/topics/${topic}/partitions/${partition}/records?offset=${offset}&format=string&isolation_level=${isolation}`));
  expect(r.status, r.text).toBe(200);
  return { values: r.body.records.map((x: { value: { data: string } }) => x.value.data) as string[], next: r.body.next_offset as number, lso: r.body.last_stable_offset as number, hw: r.body.high_watermark as number };
}


describe('Transactions over HTTP', () => {
  it('a committed transaction is seen on both its partitions at once by read_committed, never past the LSO, without markers', async () => {
    const topic = uniqueTopic('txn-commit');
    await createTopic(topic, 2, 3);
    const p = await init(uniqueTopic('tid'));
    expect((await send(p, topic, 0, ['a0', 'a1'])).status).toBe(200);
    expect((await send(p, topic, 1, ['b0'])).status).toBe(200);
    // Open: read_uncommitted sees the records, read_committed stops at the LSO (the transaction's first offset).
    expect((await read(topic, 0, 'read_uncommitted')).values).toEqual(['a0', 'a1']);
    const open0 = await read(topic, 0, 'read_committed');
    expect(open0).toMatchObject({ values: [], lso: 0, next: 0 });
    expect(open0.hw).toBe(2);
    const described = await call('GET', v3(`/transactions/${p.id}`));
    expect(described.body).toMatchObject({ state: 'Ongoing', topics: [{ topic_name: topic, partitions: [0, 1] }] });
    const ended = await end(p, true);
    expect(ended.status, ended.text).toBe(200);
    const c0 = await read(topic, 0, 'read_committed');
    const c1 = await read(topic, 1, 'read_committed');
    expect(c0.values).toEqual(['a0', 'a1']);
    expect(c1.values).toEqual(['b0']);
    // The marker took an offset: the high watermark is past it, and a reader's next offset too.
    expect(c0.hw).toBe(3);
    expect(c0.lso).toBe(3);
    expect(c0.next).toBe(3);
    expect((await read(topic, 0, 'read_uncommitted')).values).toEqual(['a0', 'a1']);
    expect((await call('GET', v3(`/transactions/${p.id}`))).body.state).toBe('CompleteCommit');
  });

  it('the last stable offset is where Kafka\'s tools show it: ListOffsets at read_committed (v3 and v2), the partition, the group\'s lag', async () => {
    const topic = uniqueTopic('txn-lso');
    await createTopic(topic, 1, 3);
    const group = uniqueTopic('g');
    const p = await init(uniqueTopic('tid'));
    expect((await send(p, topic, 0, ['a', 'b'])).status).toBe(200);
    // Another producer's transaction commits the group's offset on the partition, so the group has a lag there.
    const q = await init(uniqueTopic('tid'));
    expect((await call('POST', v3(`/transactions/${q.id}/offsets`), { producer_id: q.producer_id, producer_epoch: q.producer_epoch, group_id: group, offsets: [{ topic_name: topic, partition_id: 0, offset: 0 }] })).status).toBe(204);
    expect((await end(q, true)).status).toBe(200);
    const shown = async () => {
      const latest = (isolation: string) => call('GET', v3(`/topics/${topic}/partitions/0/offsets?timestamp=latest&isolation_level=${isolation}`));
      const [committed, uncommitted, v2, partition, lags] = await Promise.all([
        latest('read_committed'), latest('read_uncommitted'),
        call('GET', `/topics/${topic}/partitions/0/offsets?isolation_level=read_committed`),
        call('GET', v3(`/topics/${topic}/partitions/0`)), call('GET', v3(`/consumer-groups/${group}/lags`)),
      ]);
      return {
        committed: [committed.body.offset, committed.body.end_offset], uncommitted: [uncommitted.body.offset, uncommitted.body.end_offset],
        v2: v2.body.end_offset, partition: [partition.body.last_stable_offset, partition.body.high_watermark],
        lag: lags.body.data.map((l: Record<string, number>) => [l.current_offset, l.last_stable_offset, l.log_end_offset, l.lag]),
      };
    };
    expect(await shown()).toEqual({ committed: [0, 0], uncommitted: [2, 2], v2: 0, partition: [0, 2], lag: [[0, 0, 2, 2]] });
    expect((await end(p, true)).status).toBe(200);
    expect(await shown()).toEqual({ committed: [3, 3], uncommitted: [3, 3], v2: 3, partition: [3, 3], lag: [[0, 3, 3, 3]] });
    expect((await call('GET', v3(`/topics/${topic}/partitions/0/offsets?timestamp=latest&isolation_level=snapshot`))).status).toBe(400);
  });

  it('an aborted transaction is never seen by read_committed; the next one from the same producer is', async () => {
    const topic = uniqueTopic('txn-abort');
    await createTopic(topic, 1, 3);
    const p = await init(uniqueTopic('tid'));
    await send(p, topic, 0, ['x0', 'x1']);
    expect((await end(p, false)).status).toBe(200);
    await send(p, topic, 0, ['y0']);
    expect((await end(p, true)).status).toBe(200);
    const committed = await read(topic, 0, 'read_committed');
    expect(committed.values).toEqual(['y0']);
    expect(committed.next).toBe(5);
    expect((await read(topic, 0, 'read_uncommitted')).values).toEqual(['x0', 'x1', 'y0']);
    // A reader that starts inside the aborted transaction moves past it and its marker.
    expect((await read(topic, 0, 'read_committed', 1)).values).toEqual(['y0']);
  });

  it('a second init fences the first producer: its send and commit fail PRODUCER_FENCED and its open transaction is aborted', async () => {
    const topic = uniqueTopic('txn-fence');
    await createTopic(topic, 1, 3);
    const id = uniqueTopic('tid');
    const old = await init(id);
    await send(old, topic, 0, ['zombie']);
    const fresh = await init(id);
    expect(fresh.producer_id).toBe(old.producer_id);
    expect(fresh.producer_epoch).toBeGreaterThan(old.producer_epoch);
    const sent = await send(old, topic, 0, ['zombie2']);
    expect(sent.status).toBe(409);
    expect(sent.body.message).toMatch(/^PRODUCER_FENCED/);
    const committed = await end(old, true);
    expect(committed.status).toBe(409);
    expect(committed.body.message).toMatch(/^PRODUCER_FENCED/);
    await send(fresh, topic, 0, ['fresh']);
    expect((await end(fresh, true)).status).toBe(200);
    expect((await read(topic, 0, 'read_committed')).values).toEqual(['fresh']);
  });

  it('a produce retried after its transaction ended is refused and joins no later transaction', async () => {
    const topic = uniqueTopic('txn-zombie');
    await createTopic(topic, 1, 3);
    const p = await init(uniqueTopic('tid'));
    await send(p, topic, 0, ['t1']);
    const stale = { ...p, seq: new Map(p.seq) };
    expect((await end(p, true)).status).toBe(200);
    await send(p, topic, 0, ['t2']);
    // The first transaction's producer epoch, sent again while the second is open.
    stale.seq.set(0, 1);
    const retried = await send(stale, topic, 0, ['late']);
    expect(retried.status).toBe(409);
    expect((await end(p, true)).status).toBe(200);
    expect((await read(topic, 0, 'read_committed')).values).toEqual(['t1', 't2']);
  });

  it('offsets sent in a transaction are committed only when it commits; a stale consumer generation is refused', async () => {
    const topic = uniqueTopic('txn-offsets');
    await createTopic(topic, 1, 3);
    const group = uniqueTopic('g');
    const p = await init(uniqueTopic('tid'));
    const offsets = (offset: number, consumer?: object) => call('POST', v3(`/transactions/${p.id}/offsets`), {
      producer_id: p.producer_id, producer_epoch: p.producer_epoch, group_id: group, offsets: [{ topic_name: topic, partition_id: 0, offset }], ...(consumer ? { consumer } : {}),
    });
    expect((await offsets(5)).status).toBe(204);
    expect((await end(p, false)).status).toBe(200);
    const none = await call('GET', v3(`/consumer-groups/${group}/offsets`));
    expect(none.status === 404 || (none.body.data ?? []).length === 0).toBe(true);
    expect((await offsets(7)).status).toBe(204);
    expect((await end(p, true)).status).toBe(200);
    const after = await call('GET', v3(`/consumer-groups/${group}/offsets`));
    expect(after.status, after.text).toBe(200);
    expect(after.body.data.map((o: { offset: number }) => o.offset)).toEqual([7]);
    const stale = await offsets(9, { member_id: 'nobody', generation_id: 1 });
    expect(stale.status).toBe(404);
    expect(stale.body.message).toMatch(/^UNKNOWN_MEMBER_ID/);
  });

  it('a transaction past its timeout is aborted by the controller\'s pass, and the LSO moves on', async () => {
    const topic = uniqueTopic('txn-timeout');
    await createTopic(topic, 1, 3);
    // (the shared stack runs no controller: its pass over transactions runs here)
    const { expireTransactions } = await import('../../lib/orchestration/transactions.js');
    const p = await init(uniqueTopic('tid'), 1000);
    await send(p, topic, 0, ['abandoned']);
    expect((await call('GET', v3(`/transactions/${p.id}`))).body.state).toBe('Ongoing');
    await new Promise((r) => setTimeout(r, 1100));
    // (this pass aborts it, or one that another file on the shared stack ran meanwhile)
    await expireTransactions();
    expect((await call('GET', v3(`/transactions/${p.id}`))).body.state).toBe('CompleteAbort');
    const r = await read(topic, 0, 'read_committed');
    expect(r.values).toEqual([]);
    expect(r.lso).toBe(2);
    const late = await end(p, true);
    expect(late.status).toBe(409);
    expect(late.body.message).toMatch(/^PRODUCER_FENCED/);
  });

  it('bad input gets a 4xx and changes nothing', async () => {
    const id = uniqueTopic('tid');
    expect((await call('POST', v3(`/transactions/${id}/producer`), { transaction_timeout_ms: 10_000_000 })).status).toBe(400);
    expect((await call('GET', v3(`/transactions/${id}`))).status).toBe(404);
    expect((await call('POST', v3(`/transactions/${id}/end`), { producer_id: 1, producer_epoch: 0, commit: true })).status).toBe(404);
    expect((await call('POST', v3(`/transactions/${id}/partitions`), { producer_id: 1 })).status).toBe(422);
    expect((await call('GET', v3('/transactions?state=Nope'))).status).toBe(400);
    const topic = uniqueTopic('txn-bad');
    await createTopic(topic, 1, 1);
    const noAcks = await call('POST', v3(`/topics/${topic}/records?acks=1&transactional_id=${id}&producer_id=1&producer_epoch=0`), { value: { type: 'STRING', data: 'x' } });
    expect(noAcks.status).toBe(400);
    // A partition that does not exist joins no transaction, and opens none.
    const p = await init(id);
    const add = (partition: number, name = topic) => call('POST', v3(`/transactions/${id}/partitions`), { producer_id: p.producer_id, producer_epoch: p.producer_epoch, partitions: [{ topic_name: name, partition_id: partition }] });
    for (const r of [await add(1), await add(0, uniqueTopic('nope'))]) {
      expect(r.status).toBe(404);
      expect(r.body.message).toMatch(/^UNKNOWN_TOPIC_OR_PARTITION/);
    }
    expect((await call('GET', v3(`/transactions/${id}`))).body).toMatchObject({ state: 'Empty', topics: [] });
  });
});
