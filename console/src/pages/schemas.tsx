/**
 * Schemas: the registry's subjects (live ones: soft-deleted subjects are not listed) with their
 * latest version, its type and the compatibility level that applies (the subject's own, else the
 * global one). Read when opened and on Refresh: schemas change rarely, and each subject costs two
 * requests.
 */
import { Link } from 'wouter-preact';
import { ErrorNote, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';
import { globalLevel, listSubjects, subjectLevel, subjectVersion, type SchemaType } from '../common/schemas.js';

interface SubjectRow {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly schemaType: SchemaType;
  /** The subject's own level, undefined for the global one, null when the caller may not read it. */
  readonly level: string | undefined | null;
}

/** Levels need DESCRIBE_CONFIGS, which a reader of subjects may lack: then a level shows as unknown. */
const unknown = (): null => null;

async function readSubjects(): Promise<{ rows: SubjectRow[]; global: string | null }> {
  const [subjects, global] = await Promise.all([listSubjects(), globalLevel().catch(unknown)]);
  const rows = await Promise.all(subjects.map(async (subject): Promise<SubjectRow | undefined> => {
    try {
      const [latest, level] = await Promise.all([subjectVersion(subject, 'latest'), subjectLevel(subject).catch(unknown)]);
      return { subject, version: latest.version, id: latest.id, schemaType: latest.schemaType, level };
    } catch {
      return undefined; // deleted between the list and this read
    }
  }));
  return { rows: rows.filter((r): r is SubjectRow => r !== undefined), global };
}

export const subjectHref = (subject: string, version?: number): string =>
  `/schemas/${encodeURIComponent(subject)}${version === undefined ? '' : `/versions/${version}`}`;

export function SchemasPage() {
  const read = usePoll(readSubjects, [], 0);
  return (
    <Page title="Schemas" actions={<button type="button" onClick={read.refresh}>Refresh</button>}>
      <ErrorNote error={read.error} />
      {!read.data ? <Loading what="subjects" /> : (
        <>
          <p class="muted">Global compatibility level: <b data-testid="global-level">{read.data.global ?? '—'}</b></p>
          <Table caption="Subjects" rows={read.data.rows} rowKey={(r) => r.subject} empty="No subjects registered." columns={[
            { label: 'Subject', cell: (r) => <Link href={subjectHref(r.subject)}>{r.subject}</Link> },
            { label: 'Latest version', cell: (r) => r.version, numeric: true },
            { label: 'Id', cell: (r) => r.id, numeric: true },
            { label: 'Type', cell: (r) => r.schemaType },
            { label: 'Compatibility', cell: (r) => (r.level === null ? '—' : r.level ?? <>{read.data?.global ?? '—'} <span class="muted">(global)</span></>) },
          ]} />
        </>
      )}
    </Page>
  );
}
