/**
 * A large legal group end to end: many members subscribed to thousands of partitions with
 * long topic names. DynamoDB refuses items over 400 KB, so the group's meta item must not grow with
 * its members or partitions (per-member data lives in the member items).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { config } from '../../../lib/config.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { call, createTopic, uniqueTopic, v3 } from '../../support/api.js';

/** Tens of members on thousands of partitions (the old meta item passed 400 KB with any member count here, as the target grows with partitions); the 500-member case is measured without the store in membership.test.ts. */
const MEMBERS = 24;
const TOPICS = 20;
const PARTITIONS = 256;

/** DynamoDB's item size, as its docs define it: attribute names plus values (UTF-8 bytes, numbers ~1 byte per 2 digits). */
function itemBytes(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number') return Math.ceil(String(Math.abs(v)).replace('.', '').length / 2) + 1;
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + itemBytes(x), 0);
  return 3 + Object.entries(v as Record<string, unknown>).reduce((n, [k, x]) => n + 1 + Buffer.byteLength(k) + itemBytes(x), 0);
}

describe('Consumer groups at scale', () => {
  it(`where ${MEMBERS} members join a group subscribed to ${TOPICS * PARTITIONS} partitions of long-named topics, every partition gets exactly one owner and the meta item stays small`, async () => {
    const prefix = uniqueTopic(`large-group-${'x'.repeat(40)}`);
    const topics = Array.from({ length: TOPICS }, (_, i) => `${prefix}-${i}`);
    for (const t of topics) await createTopic(t, PARTITIONS, 1);
    const group = uniqueTopic('large-g');
    const hb = async (body: Record<string, unknown>) => {
      const r = await call('POST', v3(`/consumer-groups/${group}/heartbeat`), body);
      expect(r.status, r.text).toBe(200);
      return r.body;
    };

    // A session that cannot run out during the test: members heartbeat only once per round.
    const session = 1_800_000;
    const members = new Map<string, { epoch: number; owned: { topic: string; partition: number }[] }>();
    for (let i = 0; i < MEMBERS; i++) {
      const r = await hb({ member_epoch: 0, subscribed_topic_names: topics, session_timeout_ms: session });
      members.set(r.member_id, { epoch: r.member_epoch, owned: r.assignment });
    }
    // Rounds of heartbeats, each acknowledging what the last one revoked, until the group is stable.
    let state = '';
    for (let round = 0; round < 6 && state !== 'STABLE'; round++) {
      for (const [id, m] of members) {
        const r = await hb({ member_id: id, member_epoch: m.epoch, owned_partitions: m.owned });
        members.set(id, { epoch: r.member_epoch, owned: r.assignment });
      }
      state = (await call('GET', v3(`/consumer-groups/${group}`))).body.state;
    }
    expect(state).toBe('STABLE');
    const owner = new Map<string, string>();
    for (const [id, m] of members) {
      for (const tp of m.owned) {
        const k = `${tp.topic}#${tp.partition}`;
        expect(owner.get(k), `${k} owned twice`).toBeUndefined();
        owner.set(k, id);
      }
    }
    expect(owner.size).toBe(TOPICS * PARTITIONS);
    const counts = [...members.values()].map((m) => m.owned.length);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);

    // The meta item as stored: independent of the members and partitions.
    const meta = (await dynamo().send(new GetCommand({ TableName: config().coordinationTable, Key: { pk: `group#${group}`, sk: 'meta' }, ConsistentRead: true }))).Item;
    expect(meta).toBeDefined();
    const size = itemBytes(meta);
    process.stdout.write(`groups: meta item of a ${MEMBERS}-member group on ${TOPICS * PARTITIONS} partitions: ${size} bytes\n`);
    expect(size).toBeLessThan(2048);
  }, 300_000);
});
