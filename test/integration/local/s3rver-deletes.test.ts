/**
 * The local S3 server under the group commit's pattern: puts and deletes of different keys under
 * one prefix at once. s3rver alone removes a directory a delete left empty while a put into it is
 * opening its file, and exits on the put's ENOENT; with local/s3rver-patch.mjs it answers on.
 * And the stage bucket's lifecycle rule, which the local stack applies itself (s3rver has none).
 */
import { describe, expect, it } from 'vitest';
import { deleteStageObjects, expireStageObjects, putStageObject, listStageObjects } from '../../../lib/storage/objects.js';

describe('The local S3 server', () => {
  it('answers on through puts and deletes of different keys under one prefix at once', async () => {
    const prefix = `stage/s3rver-deletes-${process.pid}-${Date.now()}/0/1/`;
    const body = Buffer.alloc(512, 1);
    for (let round = 0; round < 40; round++) {
      // (each round: the prefix holds one key, whose delete empties it as four new keys land)
      await putStageObject(`${prefix}old-${round}`, body);
      await Promise.all([
        deleteStageObjects([`${prefix}old-${round}`]),
        ...Array.from({ length: 4 }, (_, i) => putStageObject(`${prefix}new-${round}-${i}`, body)),
      ]);
      await deleteStageObjects(Array.from({ length: 4 }, (_, i) => `${prefix}new-${round}-${i}`));
    }
    expect(await listStageObjects(prefix)).toEqual([]);
  });

  it('expires the staged objects written before the rule\'s cutoff and keeps the younger ones', async () => {
    const prefix = `stage/s3rver-expiry-${process.pid}-${Date.now()}/`;
    await putStageObject(`${prefix}0/1/left-by-a-dead-writer`, Buffer.alloc(16, 1));
    const cutoff = Date.now() + 1_000; // (S3 lists times to the second)
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await putStageObject(`${prefix}0/2/in-flight`, Buffer.alloc(16, 2));
    expect(await expireStageObjects(cutoff, prefix)).toBe(1);
    expect((await listStageObjects(prefix)).map((o) => o.key)).toEqual([`${prefix}0/2/in-flight`]);
    expect(await expireStageObjects(cutoff, prefix)).toBe(0);
    await deleteStageObjects([`${prefix}0/2/in-flight`]);
  });
});
