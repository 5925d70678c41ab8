/**
 * A gateway with `--auth`'s token check (lib/local/credentials.ts) in front of the real handlers,
 * in this test worker, on the shared stack's stores; the functions' TRIBUTARY_AUTH=token and
 * TRIBUTARY_SUPER_USERS=User:admin are set in this worker while it runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FUNCTIONS } from '../../lib/functions/catalog.js';
import { ADMIN_PRINCIPAL, CredentialStore, addUser, ensureCredentials } from '../../local/credentials.js';
import { startGateway, type Gateway } from '../../local/gateway.js';
import { replyOf, type Reply } from './api.js';

export interface AuthGateway {
  readonly gateway: Gateway;
  readonly dir: string;
  readonly file: string;
  readonly adminToken: string;
  /** Adds a user and waits until the gateway accepts its token. */
  user(principal: string): Promise<string>;
  call(method: string, p: string, token: string | undefined, body?: unknown): Promise<Reply>;
  close(): Promise<void>;
}

export async function startAuthGateway(): Promise<AuthGateway> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-authn-'));
  const file = ensureCredentials(dir).file;
  const adminToken = (JSON.parse(fs.readFileSync(file, 'utf8')) as { users: { token: string }[] }).users[0]?.token as string;
  process.env.TRIBUTARY_AUTH = 'token';
  process.env.TRIBUTARY_SUPER_USERS = ADMIN_PRINCIPAL;
  const root = path.resolve(import.meta.dirname, '../..');
  const functions = Object.fromEntries(await Promise.all(FUNCTIONS.filter((f) => f.trigger === 'http').map(async (f) =>
    [f.name, ((await import(path.join(root, f.entry))) as { handler: unknown }).handler] as const)));
  const store = new CredentialStore(file).watch();
  const gateway = await startGateway({
    host: '127.0.0.1', port: 0, functions: functions as never, maxRequestBytes: 6 * 1024 * 1024,
    authenticate: (h) => store.authenticate(h),
    control: async () => ({ status: 200, body: { local: true } }),
  });
  const call: AuthGateway['call'] = async (method, p, token, body) => {
    return replyOf(await fetch(`${gateway.url}${p}`, {
      method,
      headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }));
  };
  return {
    gateway, dir, file, adminToken, call,
    user: async (principal) => {
      const token = addUser(file, principal);
      for (let i = 0; i < 50 && (await call('GET', '/v3/clusters', token)).status === 401; i++) await new Promise((r) => setTimeout(r, 100));
      return token;
    },
    close: async () => {
      store.close();
      await gateway.close();
      fs.rmSync(dir, { recursive: true, force: true });
      process.env.TRIBUTARY_AUTH = 'none';
    },
  };
}
