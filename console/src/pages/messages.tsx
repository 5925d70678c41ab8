/**
 * The message browser: a partition (or all), from the beginning, an offset, a time or the newest
 * records, filtered by a search over key, value and headers; JSON values pretty-printed, keys and
 * values in the schema registry's wire format decoded by the server (common/schemas.ts). Reads
 * without a consumer group (nothing is committed), at most MAX_SCAN records per partition a search;
 * and a partition followed live over the WebSocket API (live.tsx).
 */
import { useState } from 'preact/hooks';
import type { KafkaMessage } from '../../../client/index.js';
import { cluster } from '../common/api.js';
import { ActionForm, Field, fmt, Page, Table, textOf } from '../common/components.js';
import { messageColumns } from '../common/message-columns.js';
import { usePoll } from '../common/poll.js';
import { decodePage, type Decoded, type DecodedRecord } from '../common/schemas.js';
import { LiveFollow } from './live.js';
import { TopicNav } from './topic-nav.js';

const MAX_SCAN = 5_000;
const PAGE_BYTES = 256 * 1024;

type From = 'beginning' | 'offset' | 'time' | 'newest';
interface Row { partition: number; message: KafkaMessage; decoded: DecodedRecord | undefined }

function matches(m: KafkaMessage, d: DecodedRecord | undefined, needle: string): boolean {
  if (!needle) return true;
  const n = needle.toLowerCase();
  const has = (b: Uint8Array | null, decoded?: Decoded) => (decoded ? JSON.stringify(decoded.data).toLowerCase().includes(n) : false) || (textOf(b)?.text.toLowerCase().includes(n) ?? false);
  return has(m.key, d?.key) || has(m.value, d?.value) || Object.entries(m.headers).some(([k, v]) => k.toLowerCase().includes(n) || has(v));
}

/** Where a partition's newest `limit` records start, from its offsets as the partition list gave them. */
type Bounds = { logStartOffset: number | null; highWatermark: number | null };

async function browse(topic: string, partition: number, from: From, at: string, limit: number, search: string, bounds: Bounds | undefined): Promise<{ rows: Row[]; scanned: number }> {
  const admin = cluster().admin;
  const newest = from === 'newest' ? Math.max(bounds?.logStartOffset ?? 0, (bounds?.highWatermark ?? 0) - limit) : undefined;
  let page = await admin.fetchMessages({
    topic, partition,
    ...(from === 'offset' ? { offset: Number(at) } : from === 'time' ? { timestamp: new Date(at).getTime() } : newest !== undefined ? { offset: newest } : {}),
    maxBytes: PAGE_BYTES,
  });
  const rows: Row[] = [];
  let scanned = 0;
  for (;;) {
    const decoded = await decodePage(topic, partition, page.messages, PAGE_BYTES);
    for (const message of page.messages) {
      scanned++;
      const d = decoded.get(message.offset);
      if (matches(message, d, search)) rows.push({ partition, message, decoded: d });
      if (rows.length >= limit) return { rows, scanned };
    }
    if (page.messages.length === 0 || page.nextOffset >= page.highWatermark || scanned >= MAX_SCAN) return { rows, scanned };
    page = await admin.fetchMessages({ topic, partition, offset: page.nextOffset, maxBytes: PAGE_BYTES });
  }
}

/** `live`: the WebSocket API can be reached with the console's credentials (not with IAM: a browser cannot sign the handshake). */
export function MessagesPage({ topic, live }: { topic: string; live: boolean }) {
  const parts = usePoll(() => cluster().admin.describePartitions(topic), [topic], 0);
  const [from, setFrom] = useState<From>('beginning');
  const [result, setResult] = useState<{ rows: Row[]; scanned: number } | undefined>();
  const count = parts.data?.length ?? 0;
  const now = new Date(Date.now() - 3_600_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  return (
    <Page title={`${topic} / messages`} sub={<TopicNav topic={topic} />}>
      <ActionForm label="Find messages" submit="Load" class="inline" action={async (d) => {
        const which = String(d.get('partition'));
        const limit = Math.max(1, Math.min(500, Number(d.get('limit')) || 50));
        const search = String(d.get('search') ?? '');
        const at = String(d.get(from === 'offset' ? 'offset' : 'time') ?? '');
        // (fresh offsets for Newest; the partition count may not have arrived when Load is pressed)
        const known = from === 'newest' || !parts.data ? await cluster().admin.describePartitions(topic) : parts.data;
        const partitions = which === 'all' ? known.map((p) => p.partitionId) : [Number(which)];
        const each = await Promise.all(partitions.map((p) => browse(topic, p, from, at, limit, search, known.find((k) => k.partitionId === p))));
        const rows = each.flatMap((e) => e.rows)
          .sort((a, b) => Number(a.message.timestamp) - Number(b.message.timestamp) || a.partition - b.partition || Number(a.message.offset) - Number(b.message.offset))
          .slice(0, limit);
        const scanned = each.reduce((s, e) => s + e.scanned, 0);
        setResult({ rows, scanned });
        return `${rows.length} message${rows.length === 1 ? '' : 's'} shown, ${fmt(scanned)} read.`;
      }}>
        <Field label="Partition">
          <select name="partition">
            <option value="all">All</option>
            {Array.from({ length: count }, (_, i) => <option value={String(i)}>{i}</option>)}
          </select>
        </Field>
        <Field label="From">
          <select name="from" value={from} onChange={(e) => setFrom(e.currentTarget.value as From)}>
            <option value="beginning">Beginning</option>
            <option value="offset">Offset</option>
            <option value="time">Time</option>
            <option value="newest">Newest</option>
          </select>
        </Field>
        {from === 'offset' && <Field label="Offset"><input name="offset" type="number" min={0} value="0" required /></Field>}
        {from === 'time' && <Field label="Time" hint="Your local time"><input name="time" type="datetime-local" value={now} required /></Field>}
        <Field label="Search" hint="Text in the key, value or headers"><input name="search" type="search" /></Field>
        <Field label="Limit"><input name="limit" type="number" min={1} max={500} value="50" /></Field>
      </ActionForm>
      {result && (
        <Table caption="Messages" rows={result.rows} rowKey={(r) => `${r.partition}/${r.message.offset}`} empty="No messages match." columns={[
          { label: 'Partition', cell: (r) => r.partition, numeric: true },
          ...messageColumns<Row>((r) => r.message, (r) => r.decoded),
        ]} />
      )}
      {live && <LiveFollow topic={topic} partitions={count} />}
    </Page>
  );
}
