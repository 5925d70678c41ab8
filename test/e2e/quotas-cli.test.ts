/**
 * `tributary quotas list|set|delete` (run as a user runs it, a child process) and the SDK's
 * `describeClientQuotas` / `alterClientQuotas`, against the shared stack. Only principals of this
 * file are given quotas (a quota on `User:ANONYMOUS` or `<default>` would throttle every test).
 */
import { describe, expect, it } from 'vitest';
import { useCli } from '../support/cli.js';
import { baseUrl } from '../support/api.js';
import { Tributary } from '../../client/index.js';

const cli = useCli();

const principal = (name: string) => `User:quota-cli-${process.pid}-${name}`;

describe('tributary quotas', () => {
  it('sets, lists (table and --json) and deletes a principal\'s quotas', async () => {
    const p = principal('erin');
    const set = await cli(['--json', 'quotas', 'set', p, '--producer-byte-rate', '1048576', '--request-rate', '100']);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ principal: p, quotas: { producer_byte_rate: 1048576, request_rate: 100 } });

    const list = await cli(['--json', 'quotas', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toContainEqual({ principal: p, quotas: { producer_byte_rate: 1048576, request_rate: 100 } });
    const table = await cli(['quotas', 'list']);
    expect(table.stdout).toMatch(new RegExp(`${p}.*1048576.*-.*100`));

    const del = await cli(['quotas', 'delete', p]);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stderr).toContain(`Deleted: ${p}`);
    expect(JSON.parse((await cli(['--json', 'quotas', 'list'])).stdout).some((e: any) => e.principal === p)).toBe(false);
  });

  it('exits 2 on a bad rate or none given, and 1 with the server\'s error for quotas that do not exist', async () => {
    const p = principal('frank');
    expect((await cli(['quotas', 'set', p, '--request-rate', '-1'])).code).toBe(2);
    expect((await cli(['quotas', 'set', p, '--request-rate', 'lots'])).code).toBe(2);
    expect((await cli(['quotas', 'set', p])).code).toBe(2);
    const missing = await cli(['quotas', 'delete', p]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No client quota is set/);
    const badPrincipal = await cli(['quotas', 'set', 'alice', '--request-rate', '5']);
    expect(badPrincipal.code).toBe(1);
    expect(badPrincipal.stderr).toMatch(/Invalid principal/);
  });
});

describe('Admin: describeClientQuotas and alterClientQuotas', () => {
  it('sets, replaces, filters by principal and removes', async () => {
    const admin = new Tributary({ url: baseUrl() }).admin();
    const [g, h] = [principal('grace'), principal('heidi')];
    await admin.alterClientQuotas({ entries: [{ principal: g, quotas: { consumer_byte_rate: 5000 } }, { principal: h, quotas: { request_rate: 9 } }] });
    expect((await admin.describeClientQuotas({ principals: [g] })).entries).toEqual([{ principal: g, quotas: { consumer_byte_rate: 5000 } }]);
    await admin.alterClientQuotas({ entries: [{ principal: g, quotas: { producer_byte_rate: 7 } }] });
    expect((await admin.describeClientQuotas({ principals: [g, h] })).entries).toEqual([
      { principal: g, quotas: { producer_byte_rate: 7 } },
      { principal: h, quotas: { request_rate: 9 } },
    ]);
    await admin.alterClientQuotas({ entries: [{ principal: g, quotas: null }, { principal: h, quotas: null }] });
    expect((await admin.describeClientQuotas({ principals: [g, h] })).entries).toEqual([]);
    await expect(admin.alterClientQuotas({ entries: [{ principal: g, quotas: null }] })).rejects.toThrow(/No client quota/);
  });
});
