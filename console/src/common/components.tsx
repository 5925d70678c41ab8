/** Small pieces every page uses: tables, errors, numbers, forms. */
import { cloneElement, type ComponentChildren, type JSX, type VNode } from 'preact';
import { useId, useState } from 'preact/hooks';
import { describeError } from './api.js';

export function Page(p: { title: string; children: ComponentChildren; actions?: ComponentChildren; sub?: ComponentChildren }) {
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <div>
          <h1 id="page-title">{p.title}</h1>
          {p.sub}
        </div>
        {p.actions && <div class="actions">{p.actions}</div>}
      </header>
      {p.children}
    </section>
  );
}

/** A read's error, shown above stale data (or alone). */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return <p class="error" role="alert">{describeError(error)}</p>;
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" aria-live="polite">Loading {what}…</p>;
}

export interface Column<T> {
  readonly label: string;
  readonly cell: (row: T) => ComponentChildren;
  readonly numeric?: boolean;
}

export function Table<T>(p: { caption: string; rows: readonly T[]; columns: readonly Column<T>[]; rowKey: (row: T) => string; empty?: string; hideCaption?: boolean }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class={p.hideCaption ? 'visually-hidden' : undefined}>{p.caption}</caption>
        <thead>
          <tr>{p.columns.map((c) => <th scope="col" class={c.numeric ? 'num' : undefined}>{c.label}</th>)}</tr>
        </thead>
        <tbody>
          {p.rows.length === 0
            ? <tr><td colSpan={p.columns.length} class="muted">{p.empty ?? 'None.'}</td></tr>
            : p.rows.map((r) => <tr key={p.rowKey(r)}>{p.columns.map((c) => <td class={c.numeric ? 'num' : undefined}>{c.cell(r)}</td>)}</tr>)}
        </tbody>
      </table>
    </div>
  );
}

/** Definition list of headline numbers. */
export function Stats({ items }: { items: readonly { label: string; value: ComponentChildren; testId?: string; tone?: 'ok' | 'bad' }[] }) {
  return (
    <dl class="stats">
      {items.map((i) => (
        <div class={`stat ${i.tone ?? ''}`}>
          <dt>{i.label}</dt>
          <dd data-testid={i.testId}>{i.value}</dd>
        </div>
      ))}
    </dl>
  );
}

export const fmt = (n: number | null | undefined): string => (n === null || n === undefined || Number.isNaN(n) ? '—' : n.toLocaleString('en-US'));

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export const fmtTime = (ms: number | string | null | undefined): string => {
  if (ms === null || ms === undefined || ms === '') return '—';
  const d = new Date(typeof ms === 'string' && /^\d+$/.test(ms) ? Number(ms) : ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace('Z', ' UTC');
};

/**
 * A labelled control; every form control in the console has a visible label. The label names the
 * control (`for`/`id`) and the hint describes it (`aria-describedby`), so a screen reader reads
 * "Value, edit text" and then the hint, not the two run together.
 */
export function Field(p: { label: string; children: VNode<Record<string, unknown>>; hint?: string }) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div class="field">
      <label class="field-label" for={id}>{p.label}</label>
      {cloneElement(p.children, { id, ...(p.hint ? { 'aria-describedby': hintId } : {}) })}
      {p.hint && <span class="hint" id={hintId}>{p.hint}</span>}
    </div>
  );
}

/**
 * A form whose submit runs `action`, showing its result (role=status) or its error (role=alert),
 * and disabling the submit button while it runs.
 */
export function ActionForm(p: { label: string; submit: string; action: (data: FormData) => Promise<string | void>; children: ComponentChildren; class?: string; onDone?: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>();
  const onSubmit = async (e: JSX.TargetedEvent<HTMLFormElement, Event>) => {
    e.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      const text = await p.action(new FormData(e.currentTarget));
      setResult({ ok: true, text: text ?? 'Done.' });
      p.onDone?.();
    } catch (err) {
      setResult({ ok: false, text: describeError(err) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class={`action-form ${p.class ?? ''}`} aria-label={p.label} onSubmit={onSubmit}>
      {p.children}
      <div class="form-actions">
        <button type="submit" disabled={busy}>{p.submit}</button>
        {result && (result.ok ? <p role="status" class="ok">{result.text}</p> : <p role="alert" class="error">{result.text}</p>)}
      </div>
    </form>
  );
}

/** A button that asks before it acts (deletes). */
export function ConfirmButton(p: { label: string; confirm: string; action: () => Promise<void>; onDone?: () => void; onError?: (e: unknown) => void }) {
  const [busy, setBusy] = useState(false);
  return (
    <button type="button" class="danger" disabled={busy} onClick={async () => {
      if (!window.confirm(p.confirm)) return;
      setBusy(true);
      try {
        await p.action();
        p.onDone?.();
      } catch (e) {
        p.onError?.(e);
      } finally {
        setBusy(false);
      }
    }}>{p.label}</button>
  );
}

/** Broker ids as a short list. */
export const ids = (xs: readonly number[]): string => xs.join(', ');

/** Text of bytes: UTF-8 when it is, else hex. */
export function textOf(b: Uint8Array | null): { text: string; binary: boolean } | null {
  if (b === null) return null;
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(b), binary: false };
  } catch {
    return { text: [...b.slice(0, 256)].map((x) => x.toString(16).padStart(2, '0')).join(' ') + (b.length > 256 ? ' …' : ''), binary: true };
  }
}

/** JSON pretty-printed when the text is JSON (objects and arrays), else the text. */
export function Pretty({ text }: { text: string }) {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return <pre class="json">{JSON.stringify(JSON.parse(t), null, 2)}</pre>;
    } catch {
      /* not JSON after all */
    }
  }
  return <span class="text">{text}</span>;
}
