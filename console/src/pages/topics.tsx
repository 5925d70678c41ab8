/** Topics: the list (partitions, replication, health) and the form that creates one. */
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { cluster } from '../common/api.js';
import { ActionForm, ErrorNote, Field, fmt, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';

export function TopicsPage() {
  const meta = usePoll(() => cluster().admin.describeMetadata(), []);
  const [creating, setCreating] = useState(false);
  const topics = [...(meta.data?.topics ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <Page title="Topics" actions={<button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>Create topic</button>}>
      {creating && (
        <ActionForm label="Create topic" submit="Create" onDone={meta.refresh} action={async (d) => {
          const topic = String(d.get('name') ?? '').trim();
          const created = await cluster().admin.createTopics({ topics: [{ topic, numPartitions: Number(d.get('partitions')), replicationFactor: Number(d.get('replicationFactor')) }] });
          return created ? `Created ${topic}.` : `${topic} exists already.`;
        }}>
          <Field label="Name"><input name="name" required maxLength={249} pattern="[a-zA-Z0-9._\-]+" /></Field>
          <Field label="Partitions"><input name="partitions" type="number" min={1} value="3" required /></Field>
          <Field label="Replication factor"><input name="replicationFactor" type="number" min={1} value="3" required /></Field>
        </ActionForm>
      )}
      <ErrorNote error={meta.error} />
      {!meta.data ? <Loading what="topics" /> : (
        <Table caption="Topics" rows={topics} rowKey={(t) => t.name} empty="No topics yet." columns={[
          { label: 'Name', cell: (t) => <Link href={`/topics/${encodeURIComponent(t.name)}`}>{t.name}</Link> },
          { label: 'Partitions', cell: (t) => fmt(t.partitions.length), numeric: true },
          { label: 'Replication factor', cell: (t) => fmt(t.partitions[0]?.replicas.length ?? 0), numeric: true },
          { label: 'Under-replicated', cell: (t) => fmt(t.partitions.filter((p) => p.isr.length < p.replicas.length).length), numeric: true },
          { label: 'Without leader', cell: (t) => fmt(t.partitions.filter((p) => p.leader < 0).length), numeric: true },
        ]} />
      )}
    </Page>
  );
}
