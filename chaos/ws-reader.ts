/**
 * A WebSocket subscriber among the chaos readers: one connection to the stack's `/ws`,
 * subscribed to every partition of the first topic from the earliest offset. Each records frame
 * goes to the history as a read (process `ws`), held to the readers' rules by the checker. When
 * the connection drops (a gateway killed, a fault) it connects again and subscribes from the next
 * offset it expects, as a client resumes; an error frame for a partition (its offset out of the
 * log) subscribes it again from the earliest offset.
 */
import { WebSocket } from 'ws';
import type { Recorder } from './recorder.js';
import type { WorkloadTarget } from './workload.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Frame {
  type: string;
  topic?: string;
  partition?: number;
  error_code?: number;
  records?: { offset: number; value: string | null }[];
}

export class WebSocketReader {
  private running = true;
  private socket: WebSocket | undefined;
  private loop: Promise<void> | undefined;
  /** The next offset expected per partition. */
  private readonly next = new Map<number, number>();

  /** `url`: where the WebSocket API is served (the stack's own gateway; the gateway processes serve HTTP only). */
  constructor(private readonly url: string, private readonly t: WorkloadTarget, private readonly h: Recorder) {}

  private get topic(): WorkloadTarget['topics'][number] {
    return this.t.topics[0]!;
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.socket?.close();
    await this.loop;
  }

  private subscribe(ws: WebSocket, partition: number, offset: number | 'earliest'): void {
    ws.send(JSON.stringify({ action: 'subscribe', topic: this.topic.name, partition, offset }));
  }

  private async run(): Promise<void> {
    while (this.running) {
      const ws = new WebSocket(`${this.url.replace(/^http/, 'ws')}/ws`);
      this.socket = ws;
      await new Promise<void>((resolve) => {
        ws.on('open', () => {
          for (let p = 0; p < this.topic.partitions; p++) this.subscribe(ws, p, this.next.get(p) ?? 'earliest');
        });
        ws.on('message', (data) => {
          const f = JSON.parse(String(data)) as Frame;
          const at = Date.now();
          // (an empty frame only moves the subscription past skipped records: no read to record)
          if (f.type === 'records' && f.topic === this.topic.name && f.partition !== undefined && f.records && f.records.length > 0) {
            const records = f.records.map((r) => ({ offset: r.offset, value: r.value === null ? '' : Buffer.from(r.value, 'base64').toString('utf8') }));
            this.h.add({ type: 'read', process: 'ws', topic: f.topic, partition: f.partition, fromOffset: records[0]?.offset ?? 0, start: at, end: at, outcome: 'ok', records });
            const last = records.at(-1);
            if (last) this.next.set(f.partition, Math.max(this.next.get(f.partition) ?? 0, last.offset + 1));
          } else if (f.type === 'error' && f.partition !== undefined && ws.readyState === WebSocket.OPEN) {
            // (out of the log after a fault: from the earliest offset again, a moment later)
            const p = f.partition;
            this.next.delete(p);
            setTimeout(() => {
              if (ws.readyState === WebSocket.OPEN) this.subscribe(ws, p, 'earliest');
            }, 1000);
          }
        });
        ws.on('close', () => resolve());
        ws.on('error', () => resolve());
      });
      ws.terminate();
      if (this.running) await sleep(1000);
    }
  }
}
