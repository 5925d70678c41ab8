/**
 * The SDK consumer's WebSocket feed against a scripted server (a socket this test answers for),
 * driving the interleavings that separate invocations of the websocket function allow: frames of
 * an earlier subscription arriving after a subscribe again, an older subscribe served after a
 * newer one, an invocation that failed (API Gateway's untyped answer).
 */
import { describe, expect, it, vi } from 'vitest';
import { WebSocketFeed, type Socket } from '../../../client/websocket-feed.js';
import { Transport } from '../../../client/transport.js';

type Listener = (e: { data?: unknown }) => void;

/** A socket whose server side is this test: what the feed sends, and frames pushed to it. */
class ScriptedSocket implements Socket {
  readyState = 0;
  readonly sent: Record<string, unknown>[] = [];
  private readonly listeners = new Map<string, Listener[]>();
  addEventListener(type: string, l: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), l]);
  }
  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }
  close(): void {
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    for (const l of this.listeners.get('open') ?? []) l({});
  }
  push(frame: unknown): void {
    for (const l of this.listeners.get('message') ?? []) l({ data: JSON.stringify(frame) });
  }
  subscribes(): unknown[] {
    return this.sent.filter((m) => m.action === 'subscribe').map((m) => m.offset);
  }
}

const record = (offset: number) => ({ offset, timestamp: 1, key: null, value: Buffer.from(`v${offset}`).toString('base64'), headers: [] });
const records = (id: string, offsets: number[]) => ({ type: 'records', topic: 't', partition: 0, records: offsets.map(record), high_watermark: 99, subscription_id: id });
const subscribed = (id: string, offset: number) => ({ type: 'subscribed', topic: 't', partition: 0, offset, isolation_level: 'read_uncommitted', subscription_id: id });

async function feed(): Promise<{ f: WebSocketFeed; socket: ScriptedSocket }> {
  const socket = new ScriptedSocket();
  const opening = WebSocketFeed.open('ws://test/ws', new Transport({ url: 'http://test' }), () => {
    queueMicrotask(() => socket.open());
    return socket;
  });
  const f = await opening;
  return { f, socket };
}

/** Runs `body` on a feed whose once-a-second tick and clock are the test's (its reads' short waits stay real). */
async function onFakeClock(body: (s: { f: WebSocketFeed; socket: ScriptedSocket }) => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  try {
    const s = await feed();
    try {
      await body(s);
    } finally {
      s.f.close();
    }
  } finally {
    vi.useRealTimers();
  }
}

const read = (f: WebSocketFeed, offset: number, maxWaitMs = 50) =>
  f.read('t', 0, offset, { maxWaitMs, signal: new AbortController().signal, readCommitted: false });

describe('the SDK consumer\'s WebSocket feed', () => {
  it('after a subscribe again from an earlier offset, frames of the earlier subscription still arriving are dropped: nothing skipped', async () => {
    const { f, socket } = await feed();
    try {
      expect((await read(f, 0))?.messages).toEqual([]);
      expect(socket.subscribes()).toEqual([0]);
      socket.push(subscribed('A', 0));
      socket.push(records('A', [0, 1, 2]));
      expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0', '1', '2']);
      // The consumer goes back to 1 (a seek, a retry of a failed callback): subscribe again from 1.
      expect((await read(f, 1))?.messages).toEqual([]);
      expect(socket.subscribes()).toEqual([0, 1]);
      // A's next frame, posted before the server stored B, arrives after: it must not move the feed to 5.
      socket.push(records('A', [3, 4]));
      socket.push(subscribed('B', 1));
      socket.push(records('B', [1, 2, 3]));
      const got = await read(f, 1);
      expect(got?.messages.map((m) => m.offset)).toEqual(['1', '2', '3']);
      expect(got?.nextOffset).toBe(4);
    } finally {
      f.close();
    }
  });

  it('an older subscribe served after the newer one (the server may hold it now) sends the newer one again; so does an unsubscribe served late', async () => {
    const { f, socket } = await feed();
    try {
      await read(f, 0);
      await read(f, 5); // (a subscribe again from 5 before the first was answered)
      expect(socket.subscribes()).toEqual([0, 5]);
      socket.push(subscribed('B', 5));
      socket.push(subscribed('A', 0)); // the subscribe from 0 was served last
      expect(socket.subscribes()).toEqual([0, 5, 5]);
      socket.push(subscribed('C', 5));
      socket.push(records('A', [0, 1]));
      socket.push(records('C', [5]));
      expect((await read(f, 5))?.messages.map((m) => m.offset)).toEqual(['5']);
      socket.push({ type: 'unsubscribed', topic: 't', partition: 0 });
      expect(socket.subscribes()).toEqual([0, 5, 5, 6]);
    } finally {
      f.close();
    }
  });

  it('a subscribe whose invocation failed (API Gateway\'s untyped answer) is sent again; an error frame is thrown once', async () => {
    const { f, socket } = await feed();
    try {
      await read(f, 7);
      socket.push({ message: 'Internal server error', connectionId: 'c', requestId: 'r' });
      expect(socket.subscribes()).toEqual([7, 7]);
      socket.push({ type: 'error', topic: 't', partition: 0, error_code: 41601, message: 'OFFSET_OUT_OF_RANGE: Offset 7 is not within the log.' });
      await expect(read(f, 7)).rejects.toMatchObject({ type: 'OFFSET_OUT_OF_RANGE' });
      expect((await read(f, 0))?.messages).toEqual([]);
      expect(socket.subscribes()).toEqual([7, 7, 0]);
    } finally {
      f.close();
    }
  });

  it('a feed that gave up reconnecting answers a waiting read with nothing, not an error: the consumer reads over HTTP and raises no crash', async () => {
    const { f } = await feed();
    const waiting = read(f, 0, 200);
    f.failed = new Error('the WebSocket API could not be reached 8 times in a row');
    await expect(waiting).resolves.toBeUndefined();
    await expect(read(f, 0)).resolves.toBeUndefined();
    f.close();
  });

  it('a subscription whose frames said more was readable than they delivered, and that then gets no frame for 10 s, is sent again from where they got to; one that got all it was told of is not', async () => {
    await onFakeClock(async ({ f, socket }) => {
    const frame = (id: string, offsets: number[], next: number, hw: number) => ({ ...records(id, offsets), high_watermark: hw, last_stable_offset: hw, next_offset: next });
    expect((await read(f, 0))?.messages).toEqual([]);
    socket.push(subscribed('A', 0));
    // All there was: offsets 0 and 1.
    socket.push(frame('A', [0, 1], 2, 2));
    expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0', '1']);
    await vi.advanceTimersByTimeAsync(11_000);
    expect(socket.subscribes()).toEqual([0]);
    // A delivery cut short: offsets 2 and 3 of the 10 readable, then nothing.
    socket.push(frame('A', [2, 3], 4, 10));
    expect((await read(f, 2))?.messages.map((m) => m.offset)).toEqual(['2', '3']);
    await vi.advanceTimersByTimeAsync(9_000);
    expect(socket.subscribes()).toEqual([0]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(socket.subscribes()).toEqual([0, 4]);
    // The new subscription goes on past records a read skipped (control records): an empty frame says so, and it is not sent again.
    socket.push(subscribed('B', 4));
    socket.push(frame('B', [4, 5], 6, 10));
    socket.push(frame('B', [], 10, 10));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(socket.subscribes()).toEqual([0, 4]);
    // A subscribe answered with records readable past its start, whose delivery never comes.
    expect((await read(f, 20))?.messages).toEqual([]);
    socket.push({ ...subscribed('G', 20), high_watermark: 25, last_stable_offset: 25 });
    await vi.advanceTimersByTimeAsync(11_000);
    expect(socket.subscribes()).toEqual([0, 4, 20, 20]);
    socket.push({ ...subscribed('H', 20), high_watermark: 25, last_stable_offset: 25 });
    socket.push(frame('H', [20, 21, 22, 23, 24], 25, 25));
    await vi.advanceTimersByTimeAsync(11_000);
    expect(socket.subscribes()).toEqual([0, 4, 20, 20]);
    // (frames of a server that does not say where it goes on never trigger it)
    expect((await read(f, 20))?.messages.map((m) => m.offset)).toEqual(['20', '21', '22', '23', '24']);
    socket.push(records('H', [25]));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(socket.subscribes()).toEqual([0, 4, 20, 20]);
    });
  });

  it('frames of a subscription the feed was never answered for (the server holds one it was not told of) send its subscribe again, once; an unsubscribe, or another start\'s subscribe, answered while a subscribe waits sends it again once answered', async () => {
    const { f, socket } = await feed();
    try {
      expect((await read(f, 0))?.messages).toEqual([]);
      socket.push(subscribed('A', 0));
      socket.push(records('A', [0]));
      expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0']);
      // X's answer was lost, or an older subscribe was stored after A: X's frames come, A's never will.
      socket.push(records('X', [1, 2]));
      socket.push(records('X', [3]));
      expect(socket.subscribes()).toEqual([0, 1]);
      socket.push(subscribed('B', 1));
      socket.push(records('B', [1, 2]));
      expect((await read(f, 1))?.messages.map((m) => m.offset)).toEqual(['1', '2']);
      // (A's late frames are an answered subscription's: dropped, nothing sent)
      socket.push(records('A', [1]));
      expect(socket.subscribes()).toEqual([0, 1]);

      // Another partition: released, then taken again; the release's unsubscribe is answered while the new subscribe waits.
      f.unsubscribe('t', 0);
      expect((await read(f, 3))?.messages).toEqual([]);
      expect(socket.subscribes()).toEqual([0, 1, 3]);
      socket.push({ type: 'unsubscribed', topic: 't', partition: 0 });
      socket.push(subscribed('C', 3));
      expect(socket.subscribes()).toEqual([0, 1, 3, 3]);
      socket.push(subscribed('D', 3));

      // A seek from 3 to 8, its subscribe stored first and the one from 3 after it, answered in that order too.
      expect((await read(f, 8))?.messages).toEqual([]);
      socket.push(subscribed('E', 3));
      socket.push(subscribed('F', 8));
      expect(socket.subscribes()).toEqual([0, 1, 3, 3, 8, 8]);
    } finally {
      f.close();
    }
  });

  it('a stalled subscription goes on from where it got to, keeping what came and was not read (a slow consumer, a skipped range): no rescan', async () => {
    await onFakeClock(async ({ f, socket }) => {
    const frame = (id: string, offsets: number[], next: number, hw: number, lso = hw) => ({ ...records(id, offsets), high_watermark: hw, last_stable_offset: lso, next_offset: next });
    expect((await read(f, 0))?.messages).toEqual([]);
    socket.push(subscribed('A', 0));
    // Offsets 0 and 1, then a range only of skipped records up to 6, of the 10 readable; the consumer does not read meanwhile.
    socket.push(frame('A', [0, 1], 2, 10));
    socket.push(frame('A', [], 6, 10));
    await vi.advanceTimersByTimeAsync(11_000);
    expect(socket.subscribes()).toEqual([0, 6]);
    socket.push(subscribed('B', 6));
    socket.push(frame('B', [6, 7, 8, 9], 10, 10));
    expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0', '1', '6', '7', '8', '9']);
    });
  });

  it('a retriable error frame (a delivery or subscribe that failed on the server) subscribes again 5 s later from where it got to; the third in a row is the consumer\'s', async () => {
    await onFakeClock(async ({ f, socket }) => {
    const failed = { type: 'error', topic: 't', partition: 0, error_code: 50003, message: 'KAFKA_STORAGE_ERROR: A store did not answer.' };
    expect((await read(f, 0))?.messages).toEqual([]);
    socket.push(subscribed('A', 0));
    socket.push({ ...records('A', [0, 1]), high_watermark: 2, last_stable_offset: 2, next_offset: 2 });
    socket.push(failed);
    expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0', '1']);
    expect(socket.subscribes()).toEqual([0]);
    await vi.advanceTimersByTimeAsync(5_500);
    expect(socket.subscribes()).toEqual([0, 2]);
    socket.push(failed);
    expect((await read(f, 2))?.messages).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_500);
    expect(socket.subscribes()).toEqual([0, 2, 2]);
    socket.push(failed);
    await expect(read(f, 2)).rejects.toMatchObject({ type: 'KAFKA_STORAGE_ERROR' });
    });
  });

  it('a subscription retired for frames it was never answered for stays retired: its late answer is ignored and its frames are dropped', async () => {
    const { f, socket } = await feed();
    try {
      expect((await read(f, 0))?.messages).toEqual([]);
      socket.push(subscribed('A', 0));
      socket.push(records('X', [0, 1]));
      expect(socket.subscribes()).toEqual([0, 0]);
      socket.push(subscribed('X', 0)); // (its answer, late)
      socket.push(subscribed('B', 0));
      socket.push(records('X', [2]));
      socket.push(records('B', [0, 1]));
      expect((await read(f, 0))?.messages.map((m) => m.offset)).toEqual(['0', '1']);
      expect(socket.subscribes()).toEqual([0, 0]);
    } finally {
      f.close();
    }
  });

  it('at read_committed the bound is the last stable offset: an open transaction above what was delivered is no stall; records below it left undelivered are', async () => {
    await onFakeClock(async ({ f, socket }) => {
      const readCommitted = (offset: number) => f.read('t', 0, offset, { maxWaitMs: 50, signal: new AbortController().signal, readCommitted: true });
      const frame = (id: string, offsets: number[], next: number, hw: number, lso: number) => ({ ...records(id, offsets), high_watermark: hw, last_stable_offset: lso, next_offset: next });
      expect((await readCommitted(0))?.messages).toEqual([]);
      socket.push({ ...subscribed('A', 0), isolation_level: 'read_committed', high_watermark: 10, last_stable_offset: 2 });
      socket.push(frame('A', [0, 1], 2, 10, 2));
      expect((await readCommitted(0))?.messages.map((m) => m.offset)).toEqual(['0', '1']);
      await vi.advanceTimersByTimeAsync(11_000);
      expect(socket.subscribes()).toEqual([0]);
      // The transaction committed (stable up to 10), and only 2 to 5 came.
      socket.push(frame('A', [2, 3, 4, 5], 6, 10, 10));
      expect((await readCommitted(2))?.messages.map((m) => m.offset)).toEqual(['2', '3', '4', '5']);
      await vi.advanceTimersByTimeAsync(11_000);
      expect(socket.subscribes()).toEqual([0, 6]);
    });
  });
});
