/**
 * A subject: its live versions (version, id, type), the chosen version's schema (AVRO and JSON
 * pretty-printed), and a line diff between two versions. A version's content never changes, so
 * the page reads them when opened and on Refresh; the diff library loads only with this page.
 */
import type { Change } from 'diff';
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ErrorNote, Field, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';
import { globalLevel, prettySchema, subjectLevel, subjectVersion, subjectVersions, type SubjectVersion } from '../common/schemas.js';
import { subjectHref } from './schemas.js';

type DiffLines = (a: string, b: string) => Change[];

/** The versions, and the level that applies (null when the caller may not read levels: DESCRIBE_CONFIGS). */
async function readSubject(subject: string): Promise<{ versions: SubjectVersion[]; level: string | null; global: boolean }> {
  const [numbers, own] = await Promise.all([subjectVersions(subject), subjectLevel(subject).catch(() => null)]);
  const [versions, level] = await Promise.all([
    Promise.all(numbers.map((v) => subjectVersion(subject, v))),
    own === undefined ? globalLevel().catch(() => null) : own,
  ]);
  return { versions, level, global: own === undefined };
}

/** The lines of a diff, each marked as added, removed or kept. */
function DiffView({ changes }: { changes: readonly Change[] }) {
  const lines = changes.flatMap((c) => c.value.replace(/\n$/, '').split('\n').map((text) => ({ text, added: c.added, removed: c.removed })));
  const added = lines.filter((l) => l.added).length;
  const removed = lines.filter((l) => l.removed).length;
  return (
    <>
      <p data-testid="diff-summary">{added === 0 && removed === 0 ? 'The two versions are the same.' : `${added} line${added === 1 ? '' : 's'} added, ${removed} removed.`}</p>
      <pre class="diff" data-testid="diff">
        {lines.map((l) => (l.added ? <ins>{`+ ${l.text}\n`}</ins> : l.removed ? <del>{`- ${l.text}\n`}</del> : <span>{`  ${l.text}\n`}</span>))}
      </pre>
    </>
  );
}

export function SubjectPage({ subject, version }: { subject: string; version?: number }) {
  const read = usePoll(() => readSubject(subject), [subject], 0);
  const [diffLines, setDiffLines] = useState<{ fn: DiffLines } | undefined>();
  const [pair, setPair] = useState<{ from?: number; to?: number }>({});
  useEffect(() => {
    void import('../common/line-diff.js').then((m) => setDiffLines({ fn: m.diffLines }));
  }, []);

  const versions = read.data?.versions ?? [];
  const shown = versions.find((v) => v.version === version) ?? versions[versions.length - 1];
  const at = (n: number | undefined) => versions.find((v) => v.version === n);
  const to = at(pair.to) ?? shown;
  const from = at(pair.from) ?? versions[Math.max(0, versions.indexOf(to as SubjectVersion) - 1)];
  const options = versions.map((v) => <option value={String(v.version)}>{v.version}</option>);

  return (
    <Page title={subject} sub={<p class="subnav"><Link href="/schemas">All subjects</Link></p>} actions={<button type="button" onClick={read.refresh}>Refresh</button>}>
      <ErrorNote error={read.error} />
      {!read.data ? <Loading what="versions" /> : (
        <>
          <p class="muted">Compatibility level: <b data-testid="level">{read.data.level ?? '—'}</b>{read.data.global && ' (global)'}</p>
          <Table caption="Versions" rows={versions} rowKey={(v) => String(v.version)} empty="No live versions." columns={[
            { label: 'Version', cell: (v) => <Link href={subjectHref(subject, v.version)} aria-current={v === shown ? 'page' : undefined}>{v.version}</Link>, numeric: true },
            { label: 'Id', cell: (v) => v.id, numeric: true },
            { label: 'Type', cell: (v) => v.schemaType },
          ]} />
          {shown && (
            <section aria-labelledby="schema-title">
              <h2 id="schema-title">Version {shown.version} <span class="muted">(id {shown.id}, {shown.schemaType})</span></h2>
              <pre class="schema" data-testid="schema">{prettySchema(shown.schemaType, shown.schema)}</pre>
            </section>
          )}
          {versions.length > 1 && from && to && (
            <section aria-labelledby="diff-title">
              <h2 id="diff-title">Compare versions</h2>
              <form class="action-form inline" aria-label="Compare versions" onSubmit={(e) => e.preventDefault()}>
                <Field label="From version">
                  <select value={String(from.version)} onChange={(e) => setPair({ from: Number(e.currentTarget.value), to: to.version })}>{options}</select>
                </Field>
                <Field label="To version">
                  <select value={String(to.version)} onChange={(e) => setPair({ from: from.version, to: Number(e.currentTarget.value) })}>{options}</select>
                </Field>
              </form>
              {diffLines ? <DiffView changes={diffLines.fn(`${prettySchema(from.schemaType, from.schema)}\n`, `${prettySchema(to.schemaType, to.schema)}\n`)} /> : <Loading what="the diff" />}
            </section>
          )}
        </>
      )}
    </Page>
  );
}
