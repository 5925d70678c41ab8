/**
 * The group commit of appends from different instances (lib/log/staged-commit.ts, spec/commit.qnt):
 * writers that stage their batches and commit what they see. The writers here call appendStaged
 * directly and concurrently in one process — as separate instances would, since appendStaged
 * shares no lane — against the real stores; a dead instance is a staged item nobody commits for
 * it, a lost answer a hook on the storage client.
 */
import { describe, expect, it, vi } from 'vitest';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { appendOnHead, planBatch, readyBatch, startPlan } from '../../../lib/log/append-plan.js';
import { appendStaged, combiningSince, contended } from '../../../lib/log/staged-commit.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { deletePartition } from '../../../lib/storage/replica/deletion.js';
import { claimCommitter, dropStaged, markCombining, readStage, releaseCommitter, stageBatches, type StagedItem } from '../../../lib/storage/replica/staging.js';
import type { ReplicaHead } from '../../../lib/storage/model.js';
import { KafkaError } from '../../../lib/protocol/errors.js';
import { decodeBatches } from '../../../lib/protocol/record-batch.js';
import { BATCH_OPTIONS, batchOf } from '../../support/batches.js';
import { newAppendTarget } from '../../support/partition.js';
import { hookStoreClient, loseTransactResponses } from '../../support/store-hooks.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { COMMITTER_OFFSET } from '../../../lib/storage/tables.js';

const newPartition = () => newAppendTarget('staged');
const soon = () => Date.now() + 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The log as `value@offset`, read back from the leader. */
async function logOf(t: AppendTarget): Promise<string[]> {
  const batches = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
  return batches.flatMap((b) => decodeBatches(Buffer.from(b.data as Uint8Array)).flatMap((d) => d.records.map((r) => `${r.value?.toString()}@${r.offset}`)));
}

const ready = (value: string) => batchOf(value).map((b) => readyBatch(b));
const idempotent = (producerId: number, seq: number, value: string) =>
  prepareBatches([{ key: null, value: Buffer.from(value), headers: [] }], BATCH_OPTIONS, Date.now(), { producerId, producerEpoch: 0, baseSequence: seq }).map((b) => readyBatch(b));

/** A staged item of another writer holding `value`, as appendStaged puts it. */
const stagedItem = (t: AppendTarget, off: number, value: string, extra: Partial<StagedItem> = {}): StagedItem => ({
  off, stage: 'staged', leaderEpoch: t.leaderEpoch, expiresAt: Math.ceil(Date.now() / 1000) + 3600,
  batches: ready(value).map((b) => ({ data: b.bytes, recordCount: b.recordCount, maxTimestamp: b.maxTimestamp, sizeBytes: b.sizeBytes })),
  ...extra,
});

/**
 * The partition's stage reads and group commits (transactions that mark staged items), in the
 * order they reach the store; `beforeCommit` runs before the commit it is given the number of
 * (1, 2, ...) does.
 */
function watchCommits(t: AppendTarget, beforeCommit: (n: number) => Promise<void>): () => string[] {
  const seen: string[] = [];
  hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
    const name = String(context.commandName);
    const input = JSON.stringify(args.input);
    if (input.includes(`"${t.tp}"`)) {
      if (name.includes('Query') && input.includes(':head')) seen.push('read');
      if (name.includes('TransactWrite') && input.includes('#stage')) {
        seen.push('commit');
        await beforeCommit(seen.filter((x) => x === 'commit').length);
      }
    }
    return next(args);
  });
  return () => seen;
}

/** Counts the append transactions on the partition that the leader's store applied. */
function countCommits(t: AppendTarget): () => number {
  let n = 0;
  hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
    const out = await next(args);
    if (String(context.commandName).includes('TransactWrite') && JSON.stringify(args.input).includes(`"${t.tp}"`)) n++;
    return out;
  });
  return () => n;
}

describe('Group commit across instances', () => {
  it('where 24 writers stage at once, every batch is in the log once at the offset its writer answered, with no gap, in fewer commits than writers', async () => {
    const t = await newPartition();
    const commits = countCommits(t);
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => appendStaged(t, ready(`w${i}`), soon())));
    const offsets = answers.map((a) => (a[0] as { baseOffset: number }).baseOffset);
    expect([...offsets].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i));
    const log = await logOf(t);
    expect(log).toHaveLength(24);
    for (let i = 0; i < 24; i++) expect(log).toContain(`w${i}@${offsets[i]}`);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(24);
    expect(commits()).toBeGreaterThan(0);
    expect(commits()).toBeLessThan(24);
  });

  it('commits one producer\'s batches in sequence order whichever writers staged them, and answers a retry with its first offset', async () => {
    const t = await newPartition();
    // Staged in reverse order by five writers at once: each waits in the stage for its predecessor.
    const answers = await Promise.all([4, 3, 2, 1, 0].map((seq) => appendStaged(t, idempotent(7, seq, `s${seq}`), soon())));
    const bySeq = new Map([4, 3, 2, 1, 0].map((seq, i) => [seq, (answers[i]?.[0] as { baseOffset: number }).baseOffset]));
    expect([0, 1, 2, 3, 4].map((s) => bySeq.get(s))).toEqual([0, 1, 2, 3, 4]);
    const retry = await appendStaged(t, idempotent(7, 2, 's2'), soon());
    expect(retry[0]).toMatchObject({ baseOffset: 2, lastOffset: 2 });
    expect(await logOf(t)).toEqual(['s0@0', 's1@1', 's2@2', 's3@3', 's4@4']);
  });

  it('refuses a sequence whose predecessor never comes with OUT_OF_ORDER_SEQUENCE_NUMBER and takes its batch back', async () => {
    const t = await newPartition();
    await appendStaged(t, idempotent(9, 0, 'first'), soon());
    const gap = await appendStaged(t, idempotent(9, 5, 'gap'), soon());
    expect(gap[0]).toBeInstanceOf(KafkaError);
    expect((gap[0] as KafkaError).kafkaName).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(await logOf(t)).toEqual(['first@0']);
  });

  it('where an instance died after staging, the next writer commits its batch (nobody answered it), and a batch taken back is never committed', async () => {
    const t = await newPartition();
    const [dead, abandoned] = [Date.now() * 1000, Date.now() * 1000 + 1];
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, dead, 'orphan'))).toBe(true);
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, abandoned, 'taken-back'))).toBe(true);
    expect(await dropStaged(t.leader, t.tp, abandoned)).toBeUndefined();
    const answer = await appendStaged(t, ready('next'), soon());
    expect(await logOf(t)).toEqual(['orphan@0', 'next@1']);
    expect(answer[0]).toMatchObject({ baseOffset: 1 });
    const staged = (await readStage(t.leader, t.tp, 0)).items;
    expect(staged.find((i) => i.off === dead)).toMatchObject({ stage: 'committed', outcomes: [{ base: 0, last: 0 }] });
    expect(staged.find((i) => i.off === abandoned)).toMatchObject({ stage: 'dropped' });
    // A drop after the commit fails, and says what the commit gave it.
    expect(await dropStaged(t.leader, t.tp, dead)).toMatchObject({ stage: 'committed' });
  });

  it('an instance whose writer met other staged batches keeps staging; one whose writer found its batch alone appends directly again', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'other'))).toBe(true);
    await appendStaged(t, ready('met'), soon());
    expect(contended(t)).toBe(true);
    await appendStaged(t, ready('alone'), soon());
    expect(contended(t)).toBe(false);
    expect(await logOf(t)).toEqual(['other@0', 'met@1', 'alone@2']);
  });

  it('where a batch the commit took is taken back before the commit lands, the commit leaves it out and commits the rest at once, without reading the stage again', async () => {
    const t = await newPartition();
    const [kept, takenBack] = [Date.now() * 1000, Date.now() * 1000 + 1];
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, kept, 'kept'))).toBe(true);
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, takenBack, 'taken-back'))).toBe(true);
    const watch = watchCommits(t, async (n) => {
      if (n === 1) expect(await dropStaged(t.leader, t.tp, takenBack)).toBeUndefined();
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    expect(answer[0]).toMatchObject({ baseOffset: 1, lastOffset: 1 });
    expect(await logOf(t)).toEqual(['kept@0', 'writer@1']);
    // (the lost commit, then the one that took the rest: no read of the stage between)
    expect(watch().slice(0, 3)).toEqual(['read', 'commit', 'commit']);
    expect((await readStage(t.leader, t.tp, 0)).items.find((i) => i.off === takenBack)).toMatchObject({ stage: 'dropped' });
  });

  it('where another instance appends directly before the commit lands, the commit tries again on the head its loss returned, without reading the stage again', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'kept'))).toBe(true);
    const watch = watchCommits(t, async (n) => {
      if (n !== 1) return;
      const head = await readHead(t.leader, t.tp);
      const plan = startPlan(head as ReplicaHead, new Map());
      for (const b of ready('direct')) planBatch(t, plan, b);
      await appendOnHead(t, head as ReplicaHead, plan.records, []);
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    expect(answer[0]).toMatchObject({ baseOffset: 2, lastOffset: 2 });
    expect(await logOf(t)).toEqual(['direct@0', 'kept@1', 'writer@2']);
    // (the lost commit, then the one that took the rest: no read of the stage between)
    expect(watch().slice(0, 3)).toEqual(['read', 'commit', 'commit']);
  });

  it('an instance that appended last cannot keep the head from a commit: the commit its append made lose marks the head, and that instance\'s next append, on the head it knows, loses and stages', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'kept'))).toBe(true);
    /** Appends `value` directly on `head` as the direct path writes it (a stageable chunk). */
    const direct = (head: ReplicaHead, value: string) => {
      const plan = startPlan(head, new Map());
      for (const b of ready(value)) planBatch(t, plan, b);
      return appendOnHead(t, head, plan.records, [], { notCombinedSince: combiningSince() });
    };
    let known: ReplicaHead | undefined;
    let refused: unknown;
    let later: Promise<unknown> | undefined;
    watchCommits(t, async (n) => {
      if (n === 1) {
        // (another instance appends directly before the commit lands, and knows the head it left)
        const head = await readHead(t.leader, t.tp) as ReplicaHead;
        await direct(head, 'direct');
        known = { ...head, leo: head.leo + 1 };
      }
      if (n === 2) {
        // (it appends again on that head before the commit's second try lands)
        refused = await direct(known as ReplicaHead, 'again').then(() => undefined, (err: unknown) => err);
        // (and its next append, through the direct path, reads the mark and stages)
        let staged: () => void = () => undefined;
        const put = new Promise<void>((r) => { staged = r; });
        hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
          if (String(context.commandName).includes('Put') && JSON.stringify(args.input).includes('"staged"')) staged();
          return next(args);
        });
        later = appendToLeader(t, batchOf('later'));
        await Promise.race([later, put]);
      }
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    expect(answer[0]).toMatchObject({ baseOffset: 2, lastOffset: 2 });
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).at(0)?.current?.combinedAt).toBeGreaterThan(Date.now() - 10_000);
    expect(await later).toEqual([expect.objectContaining({ baseOffset: 3 })]);
    expect(await logOf(t)).toEqual(['direct@0', 'kept@1', 'writer@2', 'later@3']);
  });

  it('an append on the head this instance cached from its own last append stages when the head was marked combining since', async () => {
    const t = await newPartition();
    await appendToLeader(t, batchOf('alone'));
    await markCombining(t.leader, t.tp, t.leaderEpoch, Date.now());
    const watch = watchCommits(t, async () => undefined);
    expect(await appendToLeader(t, batchOf('marked'))).toEqual([expect.objectContaining({ baseOffset: 1 })]);
    // (its write on the cached head lost, and a group commit — a transaction that marks a staged item — took it)
    expect(watch()).toContain('commit');
    expect(await logOf(t)).toEqual(['alone@0', 'marked@1']);
  });

  it('a waiting writer reads its own item, the lease and the head, never the whole stage: only the lease holder reads that', async () => {
    const t = await newPartition();
    const now = Date.now();
    for (let i = 0; i < 30; i++) expect(await stageBatches(t.leader, t.tp, stagedItem(t, (now - 500) * 1000 + i, `other-${i}`))).toBe(true);
    expect(await claimCommitter(t.leader, t.tp, 'holder', now + 60_000, now)).toBe(true);
    const reads: string[] = [];
    hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
      const name = String(context.commandName);
      if (JSON.stringify(args.input).includes(`"${t.tp}"`) && (name.includes('Query') || name.includes('BatchGet'))) reads.push(name);
      return next(args);
    });
    await expect(appendStaged(t, ready('waiting'), Date.now() + 1_000)).rejects.toMatchObject({ kafkaName: 'REQUEST_TIMED_OUT' });
    expect(reads.length).toBeGreaterThan(1);
    expect(reads.every((r) => r.includes('BatchGet'))).toBe(true);
  });

  it('leaves out a batch whose writer gives up before the commit could land, which that writer then takes back', async () => {
    const t = await newPartition();
    const [leaving, staying] = [Date.now() * 1000, Date.now() * 1000 + 1];
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, leaving, 'leaving', { deadline: Date.now() + 50 }))).toBe(true);
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, staying, 'staying', { deadline: soon() }))).toBe(true);
    await appendStaged(t, ready('writer'), soon());
    expect(await logOf(t)).toEqual(['staying@0', 'writer@1']);
    expect(await dropStaged(t.leader, t.tp, leaving)).toBeUndefined();
  });

  it('where the answer to a writer\'s commit is lost, it learns its offset from the stage and nothing is appended twice', async () => {
    const t = await newPartition();
    const lost = loseTransactResponses(t.leader.endpoint, t.tp, 1);
    const answer = await appendStaged(t, ready('once'), soon());
    expect(lost()).toBe(1);
    expect(answer[0]).toMatchObject({ baseOffset: 0, lastOffset: 0 });
    expect(await logOf(t)).toEqual(['once@0']);
  });

  it('where the deadline passes before any commit, the writer takes its batch back and answers REQUEST_TIMED_OUT; no later commit appends it', async () => {
    const t = await newPartition();
    const out = await appendStaged(t, ready('late'), Date.now() - 1).catch((e: unknown) => e);
    expect(out).toBeInstanceOf(KafkaError);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    await appendStaged(t, ready('after'), soon());
    expect(await logOf(t)).toEqual(['after@0']);
  });

  it('a take-back that meets a commit\'s transaction on its item asks again, and the writer answers from what the store then holds', async () => {
    const t = await newPartition();
    let conflicts = 0;
    hookStoreClient(t.leader.endpoint, 'deserialize', (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      if (String(context.commandName).includes('Update') && input.includes(':dropped') && conflicts < 2) {
        conflicts++;
        throw new TransactionConflictException({ message: 'Transaction is ongoing for the item (test hook)', $metadata: {} });
      }
      return next(args);
    });
    const out = await appendStaged(t, ready('late'), Date.now() - 1).catch((e: unknown) => e);
    expect(conflicts).toBe(2);
    expect(out).toBeInstanceOf(KafkaError);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    expect((await readStage(t.leader, t.tp, 0)).items.map((i) => i.stage)).toEqual(['dropped']);
  });

  it('a holder whose mark of the head meets a transaction on the head goes on committing (the mark is a hint)', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'kept'))).toBe(true);
    let conflicts = 0;
    hookStoreClient(t.leader.endpoint, 'deserialize', (next, context) => async (args) => {
      if (String(context.commandName).includes('Update') && JSON.stringify(args.input).includes('combinedAt') && conflicts === 0) {
        conflicts++;
        throw new TransactionConflictException({ message: 'Transaction is ongoing for the item (test hook)', $metadata: {} });
      }
      return next(args);
    });
    watchCommits(t, async (n) => {
      if (n !== 1) return;
      const head = await readHead(t.leader, t.tp) as ReplicaHead;
      const plan = startPlan(head, new Map());
      for (const b of ready('direct')) planBatch(t, plan, b);
      await appendOnHead(t, head, plan.records, []);
    });
    expect(await appendStaged(t, ready('writer'), soon())).toEqual([expect.objectContaining({ baseOffset: 2 })]);
    expect(conflicts).toBe(1);
    expect(await logOf(t)).toEqual(['direct@0', 'kept@1', 'writer@2']);
  });

  it('a waiting writer whose reads are throttled (keys left unprocessed) answers REQUEST_TIMED_OUT as an unknown outcome after a few tries, not after seconds of backoff', async () => {
    const t = await newPartition();
    let throttled = 0;
    hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
      const out = await next(args) as { output: { Responses?: Record<string, unknown[]>; UnprocessedKeys?: Record<string, { Keys: unknown[] }> } };
      const input = args.input as { RequestItems?: Record<string, { Keys: unknown[] }> };
      if (String(context.commandName).includes('BatchGet') && JSON.stringify(input).includes(`"${t.tp}"`)) {
        throttled++;
        out.output.UnprocessedKeys = Object.fromEntries(Object.entries(input.RequestItems ?? {}).map(([table, r]) => [table, { Keys: r.Keys }]));
        out.output.Responses = {};
      }
      return out;
    });
    const started = Date.now();
    const out = await appendStaged(t, ready('throttled'), Date.now() + 5_000).catch((e: unknown) => e);
    expect(out).toBeInstanceOf(KafkaError);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    expect(throttled).toBeGreaterThan(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('never commits a batch staged under an older leader epoch, and its writer is fenced', async () => {
    const t = await newPartition();
    const stale = { ...t, leaderEpoch: t.leaderEpoch - 1 };
    const out = await appendStaged(stale, ready('stale'), soon()).catch((e: unknown) => e);
    expect((out as KafkaError).kafkaName).toBe('FENCED_LEADER_EPOCH');
    await appendStaged(t, ready('current'), soon());
    expect(await logOf(t)).toEqual(['current@0']);
  });

  it('takes the committer lease only when it is free or ran out, and gives back only its own', async () => {
    const t = await newPartition();
    const now = Date.now();
    expect(await claimCommitter(t.leader, t.tp, 'a', now + 10_000, now)).toBe(true);
    expect(await claimCommitter(t.leader, t.tp, 'b', now + 10_000, now)).toBe(false);
    await releaseCommitter(t.leader, t.tp, 'b');
    expect((await readStage(t.leader, t.tp, 0)).lease).toEqual({ holder: 'a', until: now + 10_000 });
    expect(await claimCommitter(t.leader, t.tp, 'b', now + 20_000, now + 10_001)).toBe(true);
    await releaseCommitter(t.leader, t.tp, 'b');
    expect((await readStage(t.leader, t.tp, 0)).lease).toBeUndefined();
  });

  it('where the lease holder died, the writers wait until its lease runs out, then one of them commits every staged batch', async () => {
    const t = await newPartition();
    const until = Date.now() + 600;
    expect(await claimCommitter(t.leader, t.tp, 'dead', until, Date.now())).toBe(true);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => appendStaged(t, ready(`after-${i}`), soon())));
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    expect(answers.map((a) => (a[0] as { baseOffset: number }).baseOffset).sort()).toEqual([0, 1, 2, 3]);
    expect(await logOf(t)).toHaveLength(4);
  });

  it('where a writer\'s clock is behind the commits\' (its batch below where they read the stage), it takes the batch back and stages it again, and it is committed once', async () => {
    const t = await newPartition();
    await appendStaged(t, ready('first'), soon());
    const realNow = Date.now.bind(Date);
    const behind = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 5_000);
    let answer;
    try {
      answer = await appendStaged(t, ready('late-clock'), Date.now() + 10_000);
    } finally {
      behind.mockRestore();
    }
    expect(answer[0]).toMatchObject({ baseOffset: 1, lastOffset: 1 });
    expect(await logOf(t)).toEqual(['first@0', 'late-clock@1']);
    const stages = (await readStage(t.leader, t.tp, 0)).items.map((i) => i.stage);
    expect(stages.filter((x) => x === 'dropped')).toHaveLength(1);
    expect(stages.filter((x) => x === 'committed')).toHaveLength(2);
  });

  it('a commit that combines writers marks the head; for a second after, an append that lost no race goes to the stage instead of writing the head, then directly again', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'other'))).toBe(true);
    await appendStaged(t, ready('met'), soon());
    const combinedAt = (await readHead(t.leader, t.tp))?.combinedAt as number;
    expect(combinedAt).toBeGreaterThan(Date.now() - 5_000);
    // (alone in the stage, this instance no longer counts itself contended; a commit of one writer leaves the mark as it was)
    await appendStaged(t, ready('alone'), soon());
    expect(contended(t)).toBe(false);
    expect((await readHead(t.leader, t.tp))?.combinedAt).toBe(combinedAt);
    /** Appends `value` with the clock `ms` after the combining commit; whether it went through the stage. */
    const appendAt = async (ms: number, value: string): Promise<boolean> => {
      const realNow = Date.now.bind(Date);
      const shift = combinedAt + ms - realNow();
      const clock = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + shift);
      const watch = watchCommits(t, async () => undefined);
      try {
        await appendToLeader(t, batchOf(value));
      } finally {
        clock.mockRestore();
      }
      // (a group commit is a transaction that marks a staged item)
      return watch().includes('commit');
    };
    expect(await appendAt(200, 'joined')).toBe(true);
    expect(await appendAt(1_500, 'direct')).toBe(false);
    expect(await logOf(t)).toEqual(['other@0', 'met@1', 'alone@2', 'joined@3', 'direct@4']);
  });

  it('a batch whose put lands after a commit read the stage, with an id up to a second behind that commit\'s clock, is committed by the next commit without staging it again', async () => {
    const t = await newPartition();
    await appendStaged(t, ready('first'), soon());
    // (another writer's slow put: its id was drawn a second before the commit above, its item lands now)
    const late = (Date.now() - 1_000) * 1000;
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, late, 'late-put'))).toBe(true);
    await appendStaged(t, ready('next'), soon());
    expect(await logOf(t)).toEqual(['first@0', 'late-put@1', 'next@2']);
    expect((await readStage(t.leader, t.tp, 0)).items.find((i) => i.off === late)).toMatchObject({ stage: 'committed', outcomes: [{ base: 1, last: 1 }] });
  });

  it('a holder whose commit could land after half its lease is gone renews the lease with it; one whose lease another writer took after it ran out commits nothing more', async () => {
    const t = await newPartition();
    const sent: string[] = [];
    let took = false;
    hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      if (String(context.commandName).includes('TransactWrite') && input.includes('#stage')) sent.push(input.includes(`"off":${COMMITTER_OFFSET}}`) ? 'commit+renew' : 'commit');
      const out = await next(args);
      // (after the writer's claim lands: more than half the lease passes, and the first time another writer takes it)
      if (String(context.commandName).includes('Put') && input.includes(`"off":${COMMITTER_OFFSET},`) && input.includes(`"${t.tp}"`) && !input.includes('"holder":"other"')) {
        await sleep(1_200);
        if (!took) {
          took = true;
          expect(await claimCommitter(t.leader, t.tp, 'other', Date.now() + 600, Date.now() + 10_000)).toBe(true);
        }
      }
      return out;
    });
    const answer = await appendStaged(t, ready('held'), soon());
    expect(answer[0]).toMatchObject({ baseOffset: 0, lastOffset: 0 });
    expect(await logOf(t)).toEqual(['held@0']);
    // (the first commit lost on the lease and appended nothing; once the other lease ran out, the writer took it again and its commit renewed it)
    expect(sent).toEqual(['commit+renew', 'commit+renew']);
  });

  it('deleting the partition from the replica deletes its head, batches and lease, and leaves its staged items to their TTL', async () => {
    const t = await newPartition();
    expect(await stageBatches(t.leader, t.tp, stagedItem(t, Date.now() * 1000, 'other'))).toBe(true);
    await appendStaged(t, ready('met'), soon());
    expect(await claimCommitter(t.leader, t.tp, 'holder', Date.now() + 10_000, Date.now())).toBe(true);
    expect(await deletePartition(t.leader, t.tp)).toBe(true);
    const stage = await readStage(t.leader, t.tp, 0);
    expect(stage.head).toBeUndefined();
    expect(stage.lease).toBeUndefined();
    expect(await logOf(t)).toEqual([]);
    expect(stage.items.map((i) => i.stage)).toEqual(['committed', 'committed']);
    expect(stage.items.every((i) => i.expiresAt > Date.now() / 1000)).toBe(true);
  });
});
