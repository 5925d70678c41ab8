/**
 * The group commit of appends from different instances in rounds (lib/log/staged-commit.ts,
 * spec/rounds.qnt): writers put their batches as objects in the stage, the lease holder commits
 * what it lists. The writers here call appendStaged directly and concurrently in one process — as
 * separate instances would, since appendStaged shares no lane — against the real stores; a dead
 * instance is an object nobody commits for it, a lost answer a hook on the storage client.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { appendOnHead, planBatch, readyBatch, startPlan } from '../../../lib/log/append-plan.js';
import { appendStaged, combiningSince, contended } from '../../../lib/log/staged-commit.js';
import { stagedBatches } from '../../../lib/log/stage-plan.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { batchBytes, batchesBytes } from '../../../lib/log/read.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { readSegment } from '../../../lib/log/segment-reader.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { client } from '../../../lib/storage/replica/store.js';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { firstRound } from '../../../lib/storage/replica/rounds.js';
import { HEAD_OFFSET, ROUND_BASE } from '../../../lib/storage/tables.js';
import { deletePartition } from '../../../lib/storage/replica/deletion.js';
import { claimCommitter, markCombining, readRounds, releaseCommitter } from '../../../lib/storage/replica/rounds.js';
import { deleteStaged, listStaged, newStageId, putStaged, stagePrefix } from '../../../lib/storage/stage.js';
import type { ReplicaHead } from '../../../lib/storage/model.js';
import { KafkaError } from '../../../lib/protocol/errors.js';
import { decodeBatches } from '../../../lib/protocol/record-batch.js';
import { BATCH_OPTIONS, batchOf } from '../../support/batches.js';
import { newAppendTarget } from '../../support/partition.js';
import { hookObjectStore, hookStoreClient, loseTransactResponses } from '../../support/store-hooks.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { COMMITTER_OFFSET } from '../../../lib/storage/tables.js';

/** How many times the object store was asked (each attempt) for the commands `match` picks. */
function countAttempts(match: (command: string, input: string) => boolean): () => number {
  let n = 0;
  hookObjectStore('deserialize', (next, context) => async (args) => {
    if (match(String(context.commandName), JSON.stringify(args.input))) n++;
    return next(args);
  });
  return () => n;
}

const newPartition = () => newAppendTarget('staged');
const soon = () => Date.now() + 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The log as `value@offset`, read back from the leader (inline or in S3). */
async function logOf(t: AppendTarget): Promise<string[]> {
  const batches = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
  const bytes = await Promise.all(batches.map((b) => batchBytes(b)));
  return bytes.flatMap((b) => decodeBatches(b).flatMap((d) => d.records.map((r) => `${r.value?.toString()}@${r.offset}`)));
}

const ready = (value: string) => batchOf(value).map((b) => readyBatch(b));
const idempotent = (producerId: number, seq: number, value: string) =>
  prepareBatches([{ key: null, value: Buffer.from(value), headers: [] }], BATCH_OPTIONS, Date.now(), { producerId, producerEpoch: 0, baseSequence: seq }).map((b) => readyBatch(b));

/** Puts another writer's object holding `batches`, as appendStaged puts it; returns its stage id. */
async function stageObject(t: AppendTarget, batches: ReturnType<typeof ready>, deadline = soon()): Promise<string> {
  const id = newStageId(deadline);
  await putStaged(stagePrefix(t.topicId, t.partition, t.leaderEpoch), { id, deadline, batches: stagedBatches(batches) });
  return id;
}

/**
 * The partition's round reads (`read`), stage deletes (`delete`), lists (`list`) and round commits
 * (`commit`: transactions that write a round item), in the order they are sent; `beforeCommit`
 * runs before the commit it is given the number of (1, 2, ...) is sent.
 */
function watchRounds(t: AppendTarget, beforeCommit: (n: number) => Promise<void> = async () => undefined): () => string[] {
  const seen: string[] = [];
  hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
    const name = String(context.commandName);
    const input = JSON.stringify(args.input);
    if (input.includes(`"${t.tp}"`)) {
      if (name.includes('Query') && input.includes(':head')) seen.push('read');
      if (name.includes('TransactWrite') && input.includes('"stage":"round"')) {
        seen.push('commit');
        await beforeCommit(seen.filter((x) => x === 'commit').length);
      }
    }
    return next(args);
  });
  const stage = `stage/${t.topicId}/`;
  hookObjectStore('initialize', (next, context) => async (args) => {
    const name = String(context.commandName);
    if (JSON.stringify(args.input).includes(stage)) {
      if (name.includes('List')) seen.push('list');
      if (name.includes('DeleteObjects')) seen.push('delete');
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

const baseOf = (a: unknown[]): number => (a[0] as { baseOffset: number }).baseOffset;
/** The log's records without their offsets, sorted (a round orders different writers' objects as it lists them). */
const valuesOf = (log: readonly string[]): string[] => log.map((r) => r.slice(0, r.lastIndexOf('@'))).sort();

describe('Group commit across instances in rounds', () => {
  it('where 24 writers stage at once, every batch is in the log once at the offset its writer answered, with no gap, in fewer commits than writers; a round\'s batches share one S3 object or stay in its items', async () => {
    const t = await newPartition();
    const commits = countCommits(t);
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => appendStaged(t, ready(`w${i}`), soon())));
    const offsets = answers.map(baseOf);
    expect([...offsets].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i));
    const log = await logOf(t);
    expect(log).toHaveLength(24);
    for (let i = 0; i < 24; i++) expect(log).toContain(`w${i}@${offsets[i]}`);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(24);
    expect(commits()).toBeGreaterThan(0);
    expect(commits()).toBeLessThan(24);
    const stored = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
    expect(stored.every((b) => (b.s3 ? b.s3.key.endsWith('.round') : b.data !== undefined))).toBe(true);
    expect(new Set(stored.map((b) => b.s3?.key ?? 'inline')).size).toBeLessThan(24);
    // (every object is deleted by the round after its own, or by its writer's holder before it stopped)
    await appendStaged(t, ready('last'), soon());
    expect((await listStaged(stagePrefix(t.topicId, t.partition, t.leaderEpoch))).length).toBeLessThanOrEqual(1);
  });

  it('a round whose batches total at most 1 KB keeps them in its items, with no round object; a larger one writes one round object', async () => {
    const t = await newPartition();
    const roundPuts = countAttempts((command, input) => command === 'PutObjectCommand' && input.includes('.round'));
    const [small] = await appendStaged(t, ready('x'.repeat(100)), soon());
    expect(roundPuts()).toBe(0);
    const [large] = await appendStaged(t, ready('y'.repeat(2_000)), soon());
    expect(roundPuts()).toBe(1);
    const stored = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
    expect(stored.map((b) => [b.baseOffset, b.data !== undefined, b.s3?.key.endsWith('.round') ?? false])).toEqual([[baseOf([small]), true, false], [baseOf([large]), false, true]]);
    expect(await logOf(t)).toEqual([`${'x'.repeat(100)}@0`, `${'y'.repeat(2_000)}@1`]);
  });

  it('a read of a round\'s batches takes one ranged GET of its object; a roll copies them into its segment, which names no round object', async () => {
    const t = await newPartition();
    // (each batch over 1 KB: every round writes a round object)
    await Promise.all(Array.from({ length: 12 }, (_, i) => appendStaged(t, ready(`r${i}`.padEnd(1_100, '.')), soon())));
    const stored = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
    expect(stored.every((b) => b.s3?.key.endsWith('.round'))).toBe(true);
    const objects = new Set(stored.map((b) => b.s3?.key));
    const gets: string[] = [];
    hookObjectStore('initialize', (next, context) => async (args) => {
      if (String(context.commandName).includes('GetObject')) gets.push(JSON.stringify(args.input));
      return next(args);
    });
    const bytes = await Promise.all(batchesBytes(stored));
    expect(gets).toHaveLength(objects.size);
    expect(bytes.map((b) => b.toString('hex'))).toEqual((await Promise.all(stored.map((b) => batchBytes(b)))).map((b) => b.toString('hex')));
    await rollPartition(t.name, 0, { force: true });
    const [segment] = await listSegments(t.topicId, 0);
    expect(segment).toMatchObject({ baseOffset: 0, endOffset: 12 });
    expect(segment?.externalKeys ?? []).toEqual([]);
    gets.length = 0;
    const read = await readSegment(segment!, 0, 1e6);
    expect(read.batches.map((b) => b.toString('hex'))).toEqual(bytes.map((b) => b.toString('hex')));
    expect(gets.length).toBeLessThanOrEqual(2);
  });

  it('commits one producer\'s batches in sequence order whichever writers staged them, and answers a retry with its first offset', async () => {
    const t = await newPartition();
    // Staged in reverse order by five writers at once: each waits in the stage for its predecessor.
    const answers = await Promise.all([4, 3, 2, 1, 0].map((seq) => appendStaged(t, idempotent(7, seq, `s${seq}`), soon())));
    const bySeq = new Map([4, 3, 2, 1, 0].map((seq, i) => [seq, baseOf(answers[i] as unknown[])]));
    expect([0, 1, 2, 3, 4].map((s) => bySeq.get(s))).toEqual([0, 1, 2, 3, 4]);
    const retry = await appendStaged(t, idempotent(7, 2, 's2'), soon());
    expect(retry[0]).toMatchObject({ baseOffset: 2, lastOffset: 2 });
    expect(await logOf(t)).toEqual(['s0@0', 's1@1', 's2@2', 's3@3', 's4@4']);
  });

  it('refuses a sequence whose predecessor never comes with OUT_OF_ORDER_SEQUENCE_NUMBER once it waited its grace, and never appends it', async () => {
    const t = await newPartition();
    await appendStaged(t, idempotent(9, 0, 'first'), soon());
    const gap = await appendStaged(t, idempotent(9, 5, 'gap'), soon());
    expect(gap[0]).toBeInstanceOf(KafkaError);
    expect((gap[0] as KafkaError).kafkaName).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    await appendStaged(t, ready('after'), soon());
    expect(await logOf(t)).toEqual(['first@0', 'after@1']);
  });

  it('where an instance died after staging, the next writer commits its object (nobody answered it); an object its writer deleted is never committed', async () => {
    const t = await newPartition();
    const dead = await stageObject(t, ready('orphan'));
    const abandoned = await stageObject(t, ready('deleted'));
    await deleteStaged(stagePrefix(t.topicId, t.partition, t.leaderEpoch), [abandoned]);
    const gets = countAttempts((c) => c.includes('GetObject'));
    const answer = await appendStaged(t, ready('next'), soon());
    // (the orphan's object is read; the holder's own it has in memory, the deleted one is not listed)
    expect(gets()).toBe(1);
    const log = await logOf(t);
    expect(valuesOf(log)).toEqual(['next', 'orphan']);
    expect(log).toContain(`next@${baseOf(answer)}`);
    const orphanAt = Number(log.find((r) => r.startsWith('orphan@'))?.split('@')[1]);
    const { rounds } = await readRounds(t.leader, t.tp, 1);
    expect(rounds.flatMap((r) => Object.entries(r.outcomes))).toContainEqual([String(dead), [{ base: orphanAt, last: orphanAt }]]);
    expect(rounds.some((r) => r.outcomes[String(abandoned)])).toBe(false);
  });

  it('an instance whose writer met other staged objects keeps staging; one whose writer found its object alone appends directly again', async () => {
    const t = await newPartition();
    await stageObject(t, ready('other'));
    await appendStaged(t, ready('met'), soon());
    expect(contended(t)).toBe(true);
    await appendStaged(t, ready('alone'), soon());
    expect(contended(t)).toBe(false);
    const log = await logOf(t);
    expect(valuesOf(log.slice(0, 2))).toEqual(['met', 'other']);
    expect(log[2]).toBe('alone@2');
  });

  it('where another instance appends directly before the round lands, the round tries again on the head its loss returned, without listing the stage again', async () => {
    const t = await newPartition();
    await stageObject(t, ready('kept'));
    const watch = watchRounds(t, async (n) => {
      if (n !== 1) return;
      const head = await readHead(t.leader, t.tp);
      const plan = startPlan(head as ReplicaHead, new Map());
      for (const b of ready('direct')) planBatch(t, plan, b);
      await appendOnHead(t, head as ReplicaHead, plan.records, []);
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    const log = await logOf(t);
    expect(log[0]).toBe('direct@0');
    expect(valuesOf(log)).toEqual(['direct', 'kept', 'writer']);
    expect(log).toContain(`writer@${baseOf(answer)}`);
    const steps = watch();
    expect(steps.slice(steps.indexOf('list'), steps.indexOf('list') + 3)).toEqual(['list', 'commit', 'commit']);
  });

  it('where another round commits between a holder\'s read and its commit, the holder reads the rounds again and commits nothing twice', async () => {
    const t = await newPartition();
    const kept = await stageObject(t, ready('kept'));
    watchRounds(t, async (n) => {
      if (n !== 1) return;
      // (another holder — its lease run out meanwhile — commits the same object first)
      await appendStaged({ ...t }, ready('rival'), soon());
    });
    await appendStaged(t, ready('writer'), soon());
    const log = await logOf(t);
    expect(log.filter((r) => r.startsWith('kept@'))).toHaveLength(1);
    expect(log.filter((r) => r.startsWith('writer@'))).toHaveLength(1);
    expect(log.filter((r) => r.startsWith('rival@'))).toHaveLength(1);
    const { rounds } = await readRounds(t.leader, t.tp, 1);
    expect(rounds.filter((r) => r.outcomes[String(kept)])).toHaveLength(1);
  });

  it('deletes the objects of the rounds since the head\'s clean before it lists the stage: an object a round committed whose delete never ran is not committed again', async () => {
    const t = await newPartition();
    const prefix = stagePrefix(t.topicId, t.partition, t.leaderEpoch);
    const id = await stageObject(t, ready('once'));
    await appendStaged(t, ready('first'), soon());
    const before = await logOf(t);
    expect(valuesOf(before)).toEqual(['first', 'once']);
    // (the committing holder died before its next round's deletes: the object is back in the stage, as if never deleted)
    await putStaged(prefix, { id, deadline: soon(), batches: stagedBatches(ready('once')) });
    const head = await readHead(t.leader, t.tp) as ReplicaHead;
    expect(head.clean ?? 0).toBeLessThan(head.round ?? 0);
    const watch = watchRounds(t);
    await appendStaged(t, ready('second'), soon());
    expect(await logOf(t)).toEqual([...before, 'second@2']);
    const steps = watch();
    expect(steps.indexOf('delete')).toBeGreaterThanOrEqual(0);
    expect(steps.indexOf('delete')).toBeLessThan(steps.indexOf('list'));
    expect((await listStaged(prefix)).map((o) => o.id)).not.toContain(id);
  });

  it('an object whose put lands after a round listed the stage is committed by a later round, once', async () => {
    const t = await newPartition();
    let late: Promise<string> | undefined;
    hookObjectStore('initialize', (next, context) => async (args) => {
      const out = await next(args);
      if (String(context.commandName).includes('List') && !late) late = stageObject(t, ready('late-put'));
      return out;
    });
    await appendStaged(t, ready('first'), soon());
    await late;
    await appendStaged(t, ready('next'), soon());
    const log = await logOf(t);
    expect(log[0]).toBe('first@0');
    expect(log.filter((r) => r.startsWith('late-put@'))).toHaveLength(1);
    expect(log).toHaveLength(3);
  });

  it('an instance that appended last cannot keep the head from a round: the round its append made lose marks the head, and that instance\'s next append, on the head it knows, loses and stages', async () => {
    const t = await newPartition();
    await stageObject(t, ready('kept'));
    /** Appends `value` directly on `head` as the direct path writes it (a stageable chunk). */
    const direct = (head: ReplicaHead, value: string) => {
      const plan = startPlan(head, new Map());
      for (const b of ready(value)) planBatch(t, plan, b);
      return appendOnHead(t, head, plan.records, [], { notCombinedSince: combiningSince() });
    };
    let known: ReplicaHead | undefined;
    let refused: unknown;
    let later: Promise<unknown> | undefined;
    watchRounds(t, async (n) => {
      if (n === 1) {
        // (another instance appends directly before the round lands, and knows the head it left)
        const head = await readHead(t.leader, t.tp) as ReplicaHead;
        await direct(head, 'direct');
        known = { ...head, leo: head.leo + 1 };
      }
      if (n === 2) {
        // (it appends again on that head before the round's second try lands)
        refused = await direct(known as ReplicaHead, 'again').then(() => undefined, (err: unknown) => err);
        // (and its next append, through the direct path, reads the mark and stages)
        let staged: () => void = () => undefined;
        const put = new Promise<void>((r) => { staged = r; });
        hookObjectStore('initialize', (next, context) => async (args) => {
          if (String(context.commandName).includes('PutObject') && JSON.stringify(args.input).includes(`stage/${t.topicId}/`)) staged();
          return next(args);
        });
        later = appendToLeader(t, batchOf('later'));
        await Promise.race([later, put]);
      }
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).at(0)?.current?.combinedAt).toBeGreaterThan(Date.now() - 10_000);
    expect(await later).toEqual([expect.objectContaining({ baseOffset: 3 })]);
    const log = await logOf(t);
    expect(log[0]).toBe('direct@0');
    expect(valuesOf(log.slice(1, 3))).toEqual(['kept', 'writer']);
    expect(log).toContain(`writer@${baseOf(answer)}`);
    expect(log[3]).toBe('later@3');
  });

  it('an append on the head this instance cached from its own last append stages when the head was marked combining since', async () => {
    const t = await newPartition();
    await appendToLeader(t, batchOf('alone'));
    await markCombining(t.leader, t.tp, t.leaderEpoch, Date.now());
    const watch = watchRounds(t);
    expect(await appendToLeader(t, batchOf('marked'))).toEqual([expect.objectContaining({ baseOffset: 1 })]);
    // (its write on the cached head lost, and a round took it)
    expect(watch()).toContain('commit');
    expect(await logOf(t)).toEqual(['alone@0', 'marked@1']);
  });

  it('a waiting writer reads the rounds, the lease and the head, and never lists or reads the stage: only the lease holder does; giving up, it deletes its object and answers REQUEST_TIMED_OUT', async () => {
    const t = await newPartition();
    const now = Date.now();
    for (let i = 0; i < 5; i++) await stageObject(t, ready(`other-${i}`));
    expect(await claimCommitter(t.leader, t.tp, 'holder', now + 60_000, now)).toBe(true);
    const watch = watchRounds(t);
    const gets: string[] = [];
    hookObjectStore('initialize', (next, context) => async (args) => {
      if (String(context.commandName).includes('GetObject')) gets.push(JSON.stringify(args.input));
      return next(args);
    });
    const out = await appendStaged(t, ready('waiting'), Date.now() + 1_000).catch((e: unknown) => e);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    expect(watch().filter((s) => s === 'read').length).toBeGreaterThan(1);
    expect(watch()).not.toContain('list');
    expect(gets).toEqual([]);
    expect(await listStaged(stagePrefix(t.topicId, t.partition, t.leaderEpoch))).toHaveLength(5);
  });

  it('leaves out an object whose writer gives up before the round could land', async () => {
    const t = await newPartition();
    await stageObject(t, ready('leaving'), Date.now() + 50);
    await stageObject(t, ready('staying'));
    await appendStaged(t, ready('writer'), soon());
    expect(valuesOf(await logOf(t))).toEqual(['staying', 'writer']);
  });

  it('where the answer to a round\'s commit is lost, its writer learns its offset from the rounds and nothing is appended twice', async () => {
    const t = await newPartition();
    const lost = loseTransactResponses(t.leader.endpoint, t.tp, 1);
    const answer = await appendStaged(t, ready('once'), soon());
    expect(lost()).toBe(1);
    expect(answer[0]).toMatchObject({ baseOffset: 0, lastOffset: 0 });
    expect(await logOf(t)).toEqual(['once@0']);
  });

  it('where the deadline passes before any round, the writer deletes its object and answers REQUEST_TIMED_OUT; no later round appends it', async () => {
    const t = await newPartition();
    const out = await appendStaged(t, ready('late'), Date.now() - 1).catch((e: unknown) => e);
    expect(out).toBeInstanceOf(KafkaError);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    expect(await listStaged(stagePrefix(t.topicId, t.partition, t.leaderEpoch))).toEqual([]);
    await appendStaged(t, ready('after'), soon());
    expect(await logOf(t)).toEqual(['after@0']);
  });

  it('a writer that gives up after a holder read its object has an unknown outcome: the round may commit it, and the idempotent retry is answered with that first offset', async () => {
    const t = await newPartition();
    const prefix = stagePrefix(t.topicId, t.partition, t.leaderEpoch);
    const id = await stageObject(t, idempotent(11, 0, 'maybe'));
    watchRounds(t, async (n) => {
      // (its writer gives up between the holder's read and its commit)
      if (n === 1) await deleteStaged(prefix, [id]);
    });
    await appendStaged(t, ready('holder'), soon());
    const log = await logOf(t);
    expect(valuesOf(log)).toEqual(['holder', 'maybe']);
    const retry = await appendStaged(t, idempotent(11, 0, 'maybe'), soon());
    expect(log).toContain(`maybe@${baseOf(retry)}`);
    expect(await logOf(t)).toEqual(log);
  });

  it('a holder whose mark of the head meets a transaction on the head goes on committing (the mark is a hint)', async () => {
    const t = await newPartition();
    await stageObject(t, ready('kept'));
    let conflicts = 0;
    hookStoreClient(t.leader.endpoint, 'deserialize', (next, context) => async (args) => {
      if (String(context.commandName).includes('Update') && JSON.stringify(args.input).includes('combinedAt') && conflicts === 0) {
        conflicts++;
        throw new TransactionConflictException({ message: 'Transaction is ongoing for the item (test hook)', $metadata: {} });
      }
      return next(args);
    });
    watchRounds(t, async (n) => {
      if (n !== 1) return;
      const head = await readHead(t.leader, t.tp) as ReplicaHead;
      const plan = startPlan(head, new Map());
      for (const b of ready('direct')) planBatch(t, plan, b);
      await appendOnHead(t, head, plan.records, []);
    });
    const answer = await appendStaged(t, ready('writer'), soon());
    expect(conflicts).toBe(1);
    const log = await logOf(t);
    expect(log[0]).toBe('direct@0');
    expect(valuesOf(log)).toEqual(['direct', 'kept', 'writer']);
    expect(log).toContain(`writer@${baseOf(answer)}`);
  });

  it('never commits an object staged under an older leader epoch, and its writer is fenced', async () => {
    const t = await newPartition();
    const stale = { ...t, leaderEpoch: t.leaderEpoch - 1 };
    const out = await appendStaged(stale, ready('stale'), soon()).catch((e: unknown) => e);
    expect((out as KafkaError).kafkaName).toBe('FENCED_LEADER_EPOCH');
    await putStaged(stagePrefix(t.topicId, t.partition, stale.leaderEpoch), { id: newStageId(soon()), deadline: soon(), batches: stagedBatches(ready('stale-object')) });
    await appendStaged(t, ready('current'), soon());
    expect(await logOf(t)).toEqual(['current@0']);
  });

  it('takes the committer lease only when it is free or ran out, and gives back only its own', async () => {
    const t = await newPartition();
    const now = Date.now();
    expect(await claimCommitter(t.leader, t.tp, 'a', now + 10_000, now)).toBe(true);
    expect(await claimCommitter(t.leader, t.tp, 'b', now + 10_000, now)).toBe(false);
    await releaseCommitter(t.leader, t.tp, 'b');
    expect((await readRounds(t.leader, t.tp, 1)).lease).toEqual({ holder: 'a', until: now + 10_000 });
    expect(await claimCommitter(t.leader, t.tp, 'b', now + 20_000, now + 10_001)).toBe(true);
    await releaseCommitter(t.leader, t.tp, 'b');
    expect((await readRounds(t.leader, t.tp, 1)).lease).toBeUndefined();
  });

  it('where the lease holder died, the writers wait until its lease runs out, then one of them commits every staged object', async () => {
    const t = await newPartition();
    const until = Date.now() + 600;
    expect(await claimCommitter(t.leader, t.tp, 'dead', until, Date.now())).toBe(true);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => appendStaged(t, ready(`after-${i}`), soon())));
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    expect(answers.map(baseOf).sort()).toEqual([0, 1, 2, 3]);
    expect(await logOf(t)).toHaveLength(4);
  });

  it('a round that combines writers marks the head; a round of one writer leaves the mark as it was', async () => {
    const t = await newPartition();
    await stageObject(t, ready('other'));
    await appendStaged(t, ready('met'), soon());
    const combinedAt = (await readHead(t.leader, t.tp))?.combinedAt as number;
    expect(combinedAt).toBeGreaterThan(Date.now() - 5_000);
    await appendStaged(t, ready('alone'), soon());
    expect(contended(t)).toBe(false);
    expect((await readHead(t.leader, t.tp))?.combinedAt).toBe(combinedAt);
    expect(valuesOf(await logOf(t))).toEqual(['alone', 'met', 'other']);
  });

  it('a holder whose round could land after half its lease is gone renews the lease with it; one whose lease another writer took after it ran out commits nothing more', async () => {
    const t = await newPartition();
    const sent: string[] = [];
    let took = false;
    hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      if (String(context.commandName).includes('TransactWrite') && input.includes('"stage":"round"')) sent.push(input.includes(`"off":${COMMITTER_OFFSET}}`) ? 'commit+renew' : 'commit');
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
    // (the first round lost on the lease and appended nothing; once the other lease ran out, the writer took it again and its round renewed it)
    expect(sent).toEqual(['commit+renew', 'commit+renew']);
  });

  it('deleting the partition from the replica deletes its head, batches and lease, and leaves its round items to their TTL', async () => {
    const t = await newPartition();
    await stageObject(t, ready('other'));
    await appendStaged(t, ready('met'), soon());
    expect(await claimCommitter(t.leader, t.tp, 'holder', Date.now() + 10_000, Date.now())).toBe(true);
    expect(await deletePartition(t.leader, t.tp)).toBe(true);
    const read = await readRounds(t.leader, t.tp, 1);
    expect(read.head).toBeUndefined();
    expect(read.lease).toBeUndefined();
    expect(await logOf(t)).toEqual([]);
    expect(read.rounds.length).toBeGreaterThan(0);
  });
  it('a stage PUT whose answer is lost is not sent again: its writer answers REQUEST_TIMED_OUT, and the object, which landed, is committed once by a later round', async () => {
    const t = await newPartition();
    const stage = `stage/${t.topicId}/`;
    let lose = true;
    hookObjectStore('deserialize', (next, context) => async (args) => {
      if (!lose || !String(context.commandName).includes('PutObject') || !JSON.stringify(args.input).includes(stage)) return next(args);
      lose = false;
      await next(args);
      throw Object.assign(new Error('socket timed out (answer lost by the test hook)'), { name: 'TimeoutError', $metadata: {} });
    });
    const puts = countAttempts((c, input) => c.includes('PutObject') && input.includes(stage));
    const out = await appendStaged(t, ready('lost-answer'), soon()).catch((e: unknown) => e);
    expect((out as KafkaError).kafkaName).toBe('REQUEST_TIMED_OUT');
    expect(puts()).toBe(1);
    await appendStaged(t, ready('next'), soon());
    await appendStaged(t, ready('after'), soon());
    expect(valuesOf(await logOf(t))).toEqual(['after', 'lost-answer', 'next']);
  });

  it('a replica that leads again under a later epoch numbers its rounds after every round item of its earlier leadership, whatever its head says (a full sync resets it)', async () => {
    const t = await newPartition();
    await stageObject(t, ready('old'));
    await appendStaged(t, ready('old-writer'), soon());
    expect((await readHead(t.leader, t.tp))?.round).toBe(firstRound(t.leaderEpoch) + 1);
    // (the head loses its round and clean, as a full sync's rewrite does; the round item stays)
    await client(t.leader).send(new UpdateCommand({ TableName: t.leader.replicaTable, Key: { tp: t.tp, off: HEAD_OFFSET }, UpdateExpression: 'REMOVE round, clean' }));
    const next = { ...t, leaderEpoch: t.leaderEpoch + 1 };
    await setRole(t.leader, t.tp, 'leader', next.leaderEpoch);
    await stageObject(next, ready('new'));
    await appendStaged(next, ready('new-writer'), soon());
    expect(valuesOf((await logOf(t)).slice(2))).toEqual(['new', 'new-writer']);
    const { rounds } = await readRounds(t.leader, t.tp, 1);
    expect(rounds.map((r) => [r.leaderEpoch, r.round])).toEqual([[t.leaderEpoch, firstRound(t.leaderEpoch) + 1], [next.leaderEpoch, firstRound(next.leaderEpoch) + 1]]);
  });

  it('where the round items since the head\'s clean are gone (their TTL), rounds go on', async () => {
    const t = await newPartition();
    await stageObject(t, ready('a'));
    await appendStaged(t, ready('b'), soon());
    const head = await readHead(t.leader, t.tp) as ReplicaHead;
    expect(head.clean).toBeLessThan(head.round as number);
    await client(t.leader).send(new DeleteCommand({ TableName: t.leader.replicaTable, Key: { tp: t.tp, off: (head.round as number) - ROUND_BASE } }));
    await stageObject(t, ready('c'));
    await appendStaged(t, ready('d'), soon());
    expect(valuesOf(await logOf(t))).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a round that answers duplicates between new batches writes the new ones back to back in its object, in few items, within one transaction', async () => {
    const t = await newPartition();
    await appendStaged(t, idempotent(5, 0, 'dup'), soon());
    for (let i = 0; i < 60; i++) {
      await stageObject(t, idempotent(5, 0, 'dup'));
      await stageObject(t, ready(`plain-${i}`));
    }
    await appendStaged(t, ready('writer'), soon());
    const log = await logOf(t);
    expect(log).toHaveLength(62);
    const stored = await queryBatches(t.leader, t.tp, { fromOffset: 1, toOffset: 1e9, maxBytes: 1e9 });
    const keys = new Set(stored.map((b) => b.s3?.key));
    for (const key of keys) {
      const mine = stored.filter((b) => b.s3?.key === key);
      mine.forEach((b, i) => { if (i > 0) expect(b.s3?.position).toBe((mine[i - 1]?.s3?.position ?? 0) + (mine[i - 1]?.s3?.length ?? 0)); });
    }
  });

  it('an object past its writer\'s deadline is deleted without being read', async () => {
    const t = await newPartition();
    const prefix = stagePrefix(t.topicId, t.partition, t.leaderEpoch);
    const old = await stageObject(t, ready('expired'), Date.now() - 1_000);
    const gets = countAttempts((c, input) => c.includes('GetObject') && input.includes(old));
    await appendStaged(t, ready('writer'), soon());
    expect(gets()).toBe(0);
    expect((await listStaged(prefix)).map((o) => o.id)).not.toContain(old);
    expect(await logOf(t)).toEqual(['writer@0']);
  });
});
