/**
 * Following a partition live over the WebSocket API (docs/websocket.md): subscribe at the newest
 * offset and show each record as the cluster pushes it, newest first, the last MAX_ROWS kept. No
 * request runs while nothing arrives; the socket closes when the page goes.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { KafkaMessage } from '../../../client/index.js';
import { websocketUrl } from '../common/api.js';
import { Field, Table } from '../common/components.js';
import { messageColumns } from '../common/message-columns.js';

const MAX_ROWS = 200;
/** API Gateway closes a connection idle for 10 minutes. */
const KEEPALIVE_MS = 5 * 60_000;

interface Frame {
  type: string;
  offset?: number;
  message?: string;
  records?: { offset: number; timestamp: number; key: string | null; value: string | null; headers: { key: string; value: string | null }[] }[];
}

const bytes = (b64: string | null): Uint8Array | null => (b64 === null ? null : Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

function toMessage(r: NonNullable<Frame['records']>[number]): KafkaMessage {
  const value = bytes(r.value);
  return {
    offset: String(r.offset), timestamp: String(r.timestamp), key: bytes(r.key), value,
    headers: Object.fromEntries(r.headers.map((h) => [h.key, bytes(h.value)])), attributes: 0, size: value?.length ?? 0,
  };
}

export function LiveFollow({ topic, partitions }: { topic: string; partitions: number }) {
  const [partition, setPartition] = useState('0');
  const [rows, setRows] = useState<KafkaMessage[]>([]);
  const [status, setStatus] = useState('Not following.');
  const [following, setFollowing] = useState(false);
  const socket = useRef<WebSocket | null>(null);
  const stop = () => {
    socket.current?.close();
    socket.current = null;
    setFollowing(false);
  };
  useEffect(() => stop, [topic]);

  const start = () => {
    stop();
    setRows([]);
    const p = Number(partition);
    const ws = new WebSocket(websocketUrl());
    socket.current = ws;
    setFollowing(true);
    setStatus('Connecting…');
    const keepalive = setInterval(() => ws.send('{"action":"ping"}'), KEEPALIVE_MS);
    ws.onopen = () => ws.send(JSON.stringify({ action: 'subscribe', topic, partition: p, offset: 'latest' }));
    ws.onmessage = (e) => {
      const f = JSON.parse(String(e.data)) as Frame;
      if (f.type === 'subscribed') setStatus(`Following partition ${p} from offset ${f.offset}.`);
      if (f.type === 'records' && f.records) {
        const got = f.records.map(toMessage).reverse();
        setRows((before) => [...got, ...before].slice(0, MAX_ROWS));
      }
      if (f.type === 'error') setStatus(`Stopped: ${f.message}`);
    };
    ws.onclose = () => {
      clearInterval(keepalive);
      if (socket.current === ws) {
        socket.current = null;
        setFollowing(false);
        setStatus((s) => (s.startsWith('Stopped') ? s : 'Not following (the connection closed).'));
      }
    };
  };

  return (
    <section aria-labelledby="live-heading">
      <h2 id="live-heading">Follow live</h2>
      <div class="action-form inline">
        <Field label="Follow partition">
          <select value={partition} onChange={(e) => setPartition(e.currentTarget.value)} disabled={following}>
            {Array.from({ length: partitions }, (_, i) => <option value={String(i)}>{i}</option>)}
          </select>
        </Field>
        {following
          ? <button type="button" onClick={() => { stop(); setStatus('Not following.'); }}>Stop</button>
          : <button type="button" onClick={start} disabled={partitions === 0}>Follow</button>}
      </div>
      <p class="muted" aria-live="polite">{status}</p>
      {(following || rows.length > 0) && (
        <Table caption="Live messages" rows={rows} rowKey={(m) => m.offset} empty="Nothing yet: new records appear here as they are produced." columns={messageColumns<KafkaMessage>((m) => m)} />
      )}
    </section>
  );
}
