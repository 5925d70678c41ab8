/**
 * A topic's partitions: leader and epoch, ISR, every replica's log end offset and lag, the high
 * watermark, last stable offset and log start, refreshed every 2 s so a failover can be watched; plus adding
 * partitions and deleting the topic.
 */
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { cluster, isNotFound } from '../common/api.js';
import { ActionForm, ConfirmButton, ErrorNote, Field, fmt, ids, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';
import { TopicNav } from './topic-nav.js';

export function TopicPage({ topic }: { topic: string }) {
  const parts = usePoll(() => cluster().admin.describePartitions(topic), [topic]);
  const [, navigate] = useLocation();
  const [deleteError, setDeleteError] = useState<unknown>();
  const rows = parts.data ?? [];
  const enc = encodeURIComponent(topic);
  return (
    <Page title={topic} sub={<TopicNav topic={topic} />} actions={
      <ConfirmButton label="Delete topic" confirm={`Delete topic ${topic} and all its records?`} action={() => cluster().admin.deleteTopics({ topics: [topic] })}
        onDone={() => navigate('/topics')} onError={setDeleteError} />
    }>
      <ErrorNote error={deleteError ?? (isNotFound(parts.error) ? new Error(`Topic ${topic} does not exist.`) : parts.error)} />
      {!parts.data ? (parts.error ? null : <Loading what="partitions" />) : (
        <>
          <Table caption="Partitions" rows={rows} rowKey={(p) => String(p.partitionId)} columns={[
            { label: 'Partition', cell: (p) => <Link href={`/topics/${enc}/partitions/${p.partitionId}`}>{p.partitionId}</Link> },
            { label: 'Leader', cell: (p) => <span data-testid={`leader-${p.partitionId}`}>{p.leader < 0 ? 'none' : p.leader}</span> },
            { label: 'Leader epoch', cell: (p) => fmt(p.leaderEpoch), numeric: true },
            { label: 'ISR', cell: (p) => <span data-testid={`isr-${p.partitionId}`} class={p.isr.length < p.replicas.length ? 'bad' : undefined}>{ids(p.isr)}</span> },
            {
              label: 'Replicas (log end offset, lag)', cell: (p) => (
                <ul class="replicas">
                  {p.replicaStates.map((r) => (
                    <li class={r.isLeader ? 'leader' : r.isInSync ? 'in-sync' : 'out-of-sync'}>
                      <span class="visually-hidden">broker </span>{r.brokerId}{r.isLeader ? ' (leader)' : ''}: {r.logEndOffset === null ? 'unavailable' : fmt(r.logEndOffset)}{(r.lag ?? 0) > 0 ? `, lag ${fmt(r.lag)}` : ''}
                    </li>
                  ))}
                </ul>
              ),
            },
            { label: 'High watermark', cell: (p) => <span data-testid={`hw-${p.partitionId}`}>{fmt(p.highWatermark)}</span>, numeric: true },
            { label: 'Last stable offset', cell: (p) => <span data-testid={`lso-${p.partitionId}`}>{fmt(p.lastStableOffset)}</span>, numeric: true },
            { label: 'Log start', cell: (p) => fmt(p.logStartOffset), numeric: true },
            { label: 'Log end', cell: (p) => fmt(p.logEndOffset), numeric: true },
          ]} />
          <ActionForm label="Add partitions" submit="Add partitions" onDone={parts.refresh} action={async (d) => {
            const count = Number(d.get('count'));
            await cluster().admin.createPartitions({ topicPartitions: [{ topic, count }] });
            return `${topic} now has ${count} partitions.`;
          }}>
            <Field label="New partition count" hint="Keys map to partitions by murmur2 over the count: per-key order holds only from the change on.">
              <input name="count" type="number" min={rows.length + 1} value={String(rows.length + 1)} required />
            </Field>
          </ActionForm>
        </>
      )}
    </Page>
  );
}
