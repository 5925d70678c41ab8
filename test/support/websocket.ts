/**
 * A WebSocket subscriber for tests against the shared stack's `/ws`: its frames as they come, a
 * way to wait for one; every client opened is closed after each test.
 */
import { afterEach, expect } from 'vitest';
import { WebSocket } from 'ws';
import { baseUrl, call, v3 } from './api.js';
import { until } from './cluster.js';

export interface Frame { type: string; [k: string]: any }

/** A subscriber: its frames as they come, and a way to wait for one. */
export class Client {
  readonly frames: Frame[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.frames.push(JSON.parse(String(data)) as Frame));
  }
  static async open(query = ''): Promise<Client> {
    const ws = new WebSocket(`${baseUrl().replace(/^http/, 'ws')}/ws${query}`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const c = new Client(ws);
    open.add(c);
    return c;
  }
  send(msg: unknown): void {
    this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }
  async frame(what: string, match: (f: Frame) => boolean, ms = 15_000): Promise<Frame> {
    return until(what, () => this.frames.find(match), { ms });
  }
  /** The values of the records frames received, in order. */
  values(topic: string, partition = 0): string[] {
    return this.frames.filter((f) => f.type === 'records' && f.topic === topic && f.partition === partition)
      .flatMap((f) => f.records.map((r: any) => Buffer.from(r.value, 'base64').toString()));
  }
  offsets(topic: string, partition = 0): number[] {
    return this.frames.filter((f) => f.type === 'records' && f.topic === topic && f.partition === partition).flatMap((f) => f.records.map((r: any) => r.offset));
  }
}
const open = new Set<Client>();
afterEach(() => {
  for (const c of open) c.ws.close();
  open.clear();
});

/** Produces one record per value (a header `h` = `of-<value>`), one request each. */
export const produce = async (topic: string, values: string[], partition = 0) => {
  for (const v of values) {
    const r = await call('POST', v3(`/topics/${topic}/records`), { partition_id: partition, value: { type: 'STRING', data: v }, headers: [{ name: 'h', value: Buffer.from(`of-${v}`).toString('base64') }] });
    expect(r.status, r.text).toBe(200);
  }
};

