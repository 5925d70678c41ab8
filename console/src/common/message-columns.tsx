/** How the console shows a record in a table: the message browser's and the live follow's columns. */
import type { KafkaMessage } from '../../../client/index.js';
import { fmtTime, Pretty, textOf, type Column } from './components.js';

/** A message's offset, timestamp, key, value (JSON pretty-printed) and headers, as table columns. */
export function messageColumns<T>(of: (row: T) => KafkaMessage): Column<T>[] {
  return [
    { label: 'Offset', cell: (r) => of(r).offset, numeric: true },
    { label: 'Timestamp', cell: (r) => fmtTime(of(r).timestamp) },
    { label: 'Key', cell: (r) => { const k = textOf(of(r).key); return k === null ? <span class="muted">null</span> : <span class={k.binary ? 'binary' : undefined}>{k.text}</span>; } },
    { label: 'Value', cell: (r) => { const v = textOf(of(r).value); return v === null ? <span class="muted">null</span> : v.binary ? <span class="binary">{v.text}</span> : <Pretty text={v.text} />; } },
    { label: 'Headers', cell: (r) => {
      const hs = Object.entries(of(r).headers);
      return hs.length === 0 ? <span class="muted">—</span> : <ul class="headers">{hs.map(([k, v]) => <li><b>{k}</b>: {textOf(v)?.text ?? 'null'}</li>)}</ul>;
    } },
  ];
}

