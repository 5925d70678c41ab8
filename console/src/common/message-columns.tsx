/** How the console shows a record in a table: the message browser's and the live follow's columns. */
import type { ComponentChildren } from 'preact';
import { Link } from 'wouter-preact';
import type { KafkaMessage } from '../../../client/index.js';
import { fmtTime, Pretty, textOf, type Column } from './components.js';
import type { Decoded, DecodedRecord } from './schemas.js';

/** A key or value the server decoded with its schema: the data as JSON, under the schema it was written with (linked to its subject). */
function DecodedCell({ d }: { d: Decoded }) {
  const at = d.schema.versions[0];
  const label = `${d.type} schema ${d.schema.id}`;
  return (
    <div class="decoded">
      <span class="schema-ref">
        {at ? <Link href={`/schemas/${encodeURIComponent(at.subject)}/versions/${at.version}`}>{`${label}: ${at.subject} v${at.version}`}</Link> : label}
      </span>
      <pre class="json">{JSON.stringify(d.data, null, 2)}</pre>
    </div>
  );
}

function bytesCell(b: Uint8Array | null, decoded: Decoded | undefined, json: boolean): ComponentChildren {
  if (decoded) return <DecodedCell d={decoded} />;
  const t = textOf(b);
  if (t === null) return <span class="muted">null</span>;
  return t.binary || !json ? <span class={t.binary ? 'binary' : undefined}>{t.text}</span> : <Pretty text={t.text} />;
}

/**
 * A message's offset, timestamp, key, value (JSON pretty-printed) and headers, as table columns;
 * a key or value in `decoded` (records in the schema registry's wire format) is shown decoded.
 */
export function messageColumns<T>(of: (row: T) => KafkaMessage, decoded?: (row: T) => DecodedRecord | undefined): Column<T>[] {
  return [
    { label: 'Offset', cell: (r) => of(r).offset, numeric: true },
    { label: 'Timestamp', cell: (r) => fmtTime(of(r).timestamp) },
    { label: 'Key', cell: (r) => bytesCell(of(r).key, decoded?.(r)?.key, false) },
    { label: 'Value', cell: (r) => bytesCell(of(r).value, decoded?.(r)?.value, true) },
    { label: 'Headers', cell: (r) => {
      const hs = Object.entries(of(r).headers);
      return hs.length === 0 ? <span class="muted">—</span> : <ul class="headers">{hs.map(([k, v]) => <li><b>{k}</b>: {textOf(v)?.text ?? 'null'}</li>)}</ul>;
    } },
  ];
}
