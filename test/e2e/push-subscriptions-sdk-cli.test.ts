/**
 * Push subscriptions from the admin SDK (createSubscription, listSubscriptions,
 * describeSubscription, deleteSubscription) and from `tributary subscriptions`, run as a user runs
 * it (a child process), against the shared stack, with an http endpoint on a local receiver: the
 * secret is answered once, at the create; defaults and options come back camelCase; per-partition
 * state is described; an existing name and an unknown one are refused. Deliveries themselves are
 * the server's tests: nothing here waits for one.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from '../support/cli.js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { Tributary, TributaryProtocolError, type CreatedSubscription, type SubscriptionDescription, type SubscriptionDetails } from '../../client/index.js';

const cli = useCli();
const admin = () => new Tributary({ url: baseUrl() }).admin();

/** A receiver that accepts every delivery. */
let receiver: http.Server;
let hookUrl = '';
beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

const withoutSecret = ({ secret: _secret, ...rest }: CreatedSubscription): SubscriptionDescription => rest;

describe('SDK: admin push subscriptions', () => {
  it('creates (options and defaults, the secret once), lists, describes with partitions, refuses a second create, deletes', async () => {
    const topic = uniqueTopic('push-sdk');
    await createTopic(topic, 2, 3);
    await createTopic(`${topic}-dlq`, 1, 3);
    const a = admin();
    const name = uniqueTopic('push-sdk-sub');
    const before = Date.now();
    const created = await a.createSubscription({
      name, topic, groupId: `${name}-g`, startingPosition: 'earliest', isolationLevel: 'read_committed',
      endpoint: { type: 'http', url: hookUrl, headers: { 'x-token': 'not-shown' } },
      maxBatchRecords: 10, maxRetries: 3, deadLetterTopic: `${topic}-dlq`,
    });
    expect(created).toEqual({
      name, topic, groupId: `${name}-g`, startingPosition: 'earliest', isolationLevel: 'read_committed',
      endpoint: { type: 'http', url: hookUrl, headerNames: ['x-token'] },
      maxBatchRecords: 10, maxRetries: 3, deadLetterTopic: `${topic}-dlq`, createdAt: expect.any(Number), secret: expect.stringMatching(/^whsec_/),
    });
    expect(created.createdAt).toBeGreaterThanOrEqual(before - 5000);

    const defaults = await a.createSubscription({ name: `${name}-defaults`, topic, groupId: `${name}-g2`, endpoint: { type: 'http', url: hookUrl } });
    expect(withoutSecret(defaults)).toMatchObject({
      startingPosition: 'latest', isolationLevel: 'read_uncommitted', endpoint: { type: 'http', url: hookUrl, headerNames: [] },
      maxBatchRecords: 100, maxRetries: null, deadLetterTopic: null,
    });
    expect(defaults.secret).not.toBe(created.secret);

    const listed = await a.listSubscriptions();
    expect(listed).toContainEqual(withoutSecret(created));
    expect(listed).toContainEqual(withoutSecret(defaults));
    expect(listed.every((s) => !('secret' in s))).toBe(true);

    const described = await a.describeSubscription(name);
    expect(described).toMatchObject(withoutSecret(created));
    // The starting offsets are committed at the create: earliest on an empty topic is 0.
    expect([...described.partitions].sort((x, y) => x.partition - y.partition)).toEqual([0, 1].map((partition) => ({
      partition, committedOffset: 0, attempts: 0, nextAttemptAt: null, lastError: null,
    })));
    // The secret and the header values are answered by no read.
    const raw = await call('GET', v3(`/subscriptions/${name}`));
    expect(raw.status, raw.text).toBe(200);
    expect(raw.text).not.toContain(created.secret);
    expect(raw.text).not.toContain('not-shown');

    await expect(a.createSubscription({ name, topic, groupId: `${name}-g`, endpoint: { type: 'http', url: hookUrl } }))
      .rejects.toMatchObject({ status: 400, errorCode: 40002 });

    // The shared stack allows no Lambda targets (TRIBUTARY_PUSH_LAMBDA_TARGETS unset): refused, as a policy violation.
    const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:receiver';
    await expect(a.createSubscription({ name: `${name}-lambda`, topic, groupId: `${name}-g3`, endpoint: { type: 'lambda', functionArn: arn } }))
      .rejects.toMatchObject({ status: 400, errorCode: 40002, message: expect.stringMatching(/POLICY_VIOLATION/) });
    // A retry limit needs a dead-letter topic to send the batch to.
    await expect(a.createSubscription({ name: `${name}-limited`, topic, groupId: `${name}-g4`, endpoint: { type: 'http', url: hookUrl }, maxRetries: 1 }))
      .rejects.toMatchObject({ status: 400 });

    for (const n of [name, `${name}-defaults`]) await a.deleteSubscription(n);
    expect((await a.listSubscriptions()).map((s) => s.name)).not.toContain(name);
    const gone = await a.describeSubscription(name).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(TributaryProtocolError);
    expect(gone).toMatchObject({ status: 404, errorCode: 404, retriable: false });
    await expect(a.deleteSubscription(name)).rejects.toMatchObject({ status: 404 });
  });
});

describe('CLI: tributary subscriptions', () => {
  it('creates (--json, and as a table with the secret shown once), lists, describes, deletes; an unknown name exits 1', async () => {
    const topic = uniqueTopic('push-cli');
    await createTopic(topic, 2, 3);
    await createTopic(`${topic}-dlq`, 1, 3);
    const name = uniqueTopic('push-cli-sub');
    const made = await cli([
      '--json', 'subscriptions', 'create', name, '--topic', topic, '--group', `${name}-g`, '--http', hookUrl, '--header', 'x-token=abc',
      '--header', 'x-tenant=t1', '--starting-position', 'earliest', '--max-batch-records', '5', '--max-retries', '0', '--dead-letter-topic', `${topic}-dlq`,
    ]);
    expect(made.code, made.stderr).toBe(0);
    const created = JSON.parse(made.stdout) as CreatedSubscription;
    expect(created).toMatchObject({
      name, topic, groupId: `${name}-g`, startingPosition: 'earliest', maxBatchRecords: 5, maxRetries: 0, deadLetterTopic: `${topic}-dlq`,
      endpoint: { type: 'http', url: hookUrl },
    });
    expect(created.endpoint.type === 'http' && [...created.endpoint.headerNames].sort()).toEqual(['x-tenant', 'x-token']);
    expect(created.secret).toMatch(/^whsec_/);

    const table = await cli(['subscriptions', 'create', `${name}-table`, '--topic', topic, '--group', `${name}-g2`, '--http', hookUrl]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/subscription/);
    expect(table.stdout).toContain(`${name}-table`);
    expect(table.stdout).toMatch(/^secret: whsec_\S+$/m);
    expect(table.stderr).toContain(`Created: ${name}-table`);
    expect(table.stderr).toMatch(/will not be shown again/);

    const listed = JSON.parse((await cli(['--json', 'subscriptions', 'list'])).stdout) as SubscriptionDescription[];
    const { secret: _secret, ...shown } = created;
    expect(listed).toContainEqual(shown);
    expect(listed.map((s) => s.name)).toContain(`${name}-table`);
    const listTable = await cli(['subscriptions', 'list']);
    expect(listTable.code, listTable.stderr).toBe(0);
    for (const s of [name, `${name}-table`, hookUrl]) expect(listTable.stdout).toContain(s);
    expect(listTable.stdout).not.toContain('whsec_');

    const described = await cli(['--json', 'subscriptions', 'describe', name]);
    expect(described.code, described.stderr).toBe(0);
    const details = JSON.parse(described.stdout) as SubscriptionDetails;
    expect(details).toMatchObject(shown);
    expect(details.partitions.map((p) => p.partition).sort()).toEqual([0, 1]);
    const describedTable = await cli(['subscriptions', 'describe', name]);
    expect(describedTable.code, describedTable.stderr).toBe(0);
    for (const s of [name, topic, 'committed offset', 'attempts', 'last error']) expect(describedTable.stdout).toContain(s);

    for (const n of [name, `${name}-table`]) {
      const deleted = await cli(['subscriptions', 'delete', n]);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.stderr).toContain(`Deleted: ${n}`);
    }
    expect(JSON.parse((await cli(['--json', 'subscriptions', 'list'])).stdout).map((s: SubscriptionDescription) => s.name)).not.toContain(name);
    for (const verb of ['describe', 'delete']) {
      const unknown = await cli(['subscriptions', verb, name]);
      expect(unknown.code).toBe(1);
      expect(unknown.stdout).toBe('');
      expect(unknown.stderr).toMatch(/^tributary: \S/);
    }
  });

  it('refuses bad usage before any request (exit 2): no endpoint or two, --header without --http, a non-integer, an unknown position', async () => {
    const base = ['subscriptions', 'create', 'never-made', '--topic', 't', '--group', 'g'];
    for (const extra of [
      [], ['--http', 'https://example.com/hook', '--lambda', 'arn:aws:lambda:eu-west-1:123456789012:function:f'],
      ['--lambda', 'arn:aws:lambda:eu-west-1:123456789012:function:f', '--header', 'a=b'], ['--http', 'https://example.com/hook', '--header', 'novalue'],
      ['--http', 'https://example.com/hook', '--max-retries', 'many'], ['--http', 'https://example.com/hook', '--starting-position', 'middle'],
    ]) {
      const r = await cli([...base, ...extra]);
      expect(r.code, `${extra.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
    }
    expect((await cli(['subscriptions', 'create', 'never-made', '--http', 'https://example.com/hook'])).code).toBe(2);
    expect((await cli(['subscriptions', 'describe'])).code).toBe(2);
  });
});
