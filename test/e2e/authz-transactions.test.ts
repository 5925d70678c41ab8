/**
 * ACLs on transactions, end to end with real ACLs, as Kafka's: a transactional producer needs
 * WRITE on its TRANSACTIONAL_ID (init, produce, end) besides TOPIC WRITE; adding a partition of a
 * topic it may not write is refused and adds nothing; offsets in a transaction need GROUP READ;
 * the list shows the ids the principal may DESCRIBE (WRITE implies it); a forced abort needs CLUSTER ALTER.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';

let g: AuthGateway;
const granted = uniqueTopic('authz-txn-granted');
const other = uniqueTopic('authz-txn-other');
const mine = uniqueTopic('tid-mine');
const theirs = uniqueTopic('tid-theirs');

beforeAll(async () => {
  g = await startAuthGateway();
  await createTopic(granted, 1, 3);
  await createTopic(other, 1, 3);
  expect((await call('POST', v3(`/transactions/${theirs}/producer`), {})).status).toBe(200);
});
afterAll(async () => {
  await g?.close();
});

const acl = (principal: string, operation: string, resourceName: string, resourceType: string) =>
  g.call('POST', v3('/acls'), g.adminToken, { resource_type: resourceType, resource_name: resourceName, pattern_type: 'LITERAL', principal, host: '*', operation, permission: 'ALLOW' });

/** Retries `fn` while it answers 403 (ACLs reach the authorizer's cache within its bound). */
async function once403Clears(fn: () => Promise<{ status: number; body: any }>) {
  let r = await fn();
  for (let i = 0; i < 100 && r.status === 403; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await fn();
  }
  return r;
}

describe('ACLs on transactions', () => {
  it('needs TRANSACTIONAL_ID WRITE to init, produce and end; TOPIC WRITE per partition; GROUP READ for offsets; CLUSTER ALTER to abort', async () => {
    const token = await g.user('User:txn');
    expect((await acl('User:txn', 'WRITE', granted, 'TOPIC')).status).toBe(201);
    const denied = await g.call('POST', v3(`/transactions/${mine}/producer`), token, {});
    expect(denied.status).toBe(403);
    expect(denied.body.message).toMatch(/^TRANSACTIONAL_ID_AUTHORIZATION_FAILED/);

    expect((await acl('User:txn', 'WRITE', mine, 'TRANSACTIONAL_ID')).status).toBe(201);
    const init = await once403Clears(() => g.call('POST', v3(`/transactions/${mine}/producer`), token, {}));
    expect(init.status).toBe(200);
    const p = { producer_id: init.body.producer_id, producer_epoch: init.body.producer_epoch };
    const q = (id: string) => `acks=all&transactional_id=${id}&producer_id=${p.producer_id}&producer_epoch=${p.producer_epoch}`;
    const record = { partition_id: 0, sequence: 0, value: { type: 'STRING', data: 'x' } };

    // Another id's transaction: refused before anything happens.
    const foreign = await g.call('POST', v3(`/topics/${granted}/records?${q(theirs)}`), token, record);
    expect(foreign.status).toBe(403);
    // A topic it may not write: refused, and the partition is not added.
    expect((await g.call('POST', v3(`/topics/${other}/records?${q(mine)}`), token, record)).status).toBe(403);
    expect((await g.call('POST', v3(`/transactions/${mine}/partitions`), token, { ...p, partitions: [{ topic_name: other, partition_id: 0 }] })).status).toBe(403);
    const sent = await g.call('POST', v3(`/topics/${granted}/records?${q(mine)}`), token, record);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const described = await g.call('GET', v3(`/transactions/${mine}`), token);
    expect(described.status).toBe(200);
    expect(described.body.topics).toEqual([{ topic_name: granted, partitions: [0] }]);

    // Offsets for a group it may not read.
    const group = uniqueTopic('g');
    const offsets = { ...p, group_id: group, offsets: [{ topic_name: granted, partition_id: 0, offset: 1 }] };
    const noGroup = await g.call('POST', v3(`/transactions/${mine}/offsets`), token, offsets);
    expect(noGroup.status).toBe(403);
    expect(noGroup.body.message).toMatch(/^GROUP_AUTHORIZATION_FAILED/);

    // The list shows its own id (WRITE implies DESCRIBE), not the other; it may not describe or abort the other.
    const listed = ((await g.call('GET', v3('/transactions'), token)).body.data as { transactional_id: string }[]).map((t) => t.transactional_id);
    expect(listed).toContain(mine);
    expect(listed).not.toContain(theirs);
    expect((await g.call('GET', v3(`/transactions/${theirs}`), token)).status).toBe(403);
    expect((await g.call('POST', v3(`/transactions/${mine}/abort`), token)).status).toBe(403);
    expect((await call('GET', v3(`/transactions/${mine}`))).body.state).toBe('Ongoing');

    const ended = await g.call('POST', v3(`/transactions/${mine}/end`), token, { ...p, commit: true });
    expect(ended.status).toBe(200);
    expect((await call('GET', v3(`/transactions/${mine}`))).body.state).toBe('CompleteCommit');
  });
});
