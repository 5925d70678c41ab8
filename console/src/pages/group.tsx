/**
 * One consumer group: members and their assignments, lag per partition (committed offset, log end
 * offset, last stable offset) with the total charted while the page is open, and resetting its offsets (Kafka allows
 * that only while the group has no members).
 */
import { useLocation } from 'wouter-preact';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { ResetTo } from '../../../client/index.js';
import { cluster, isNotFound } from '../common/api.js';
import { TimeChart } from '../common/chart.js';
import { ActionForm, ConfirmButton, ErrorNote, Field, fmt, Loading, Page, Stats, Table } from '../common/components.js';
import { usePoll, useSeries } from '../common/poll.js';

export function GroupPage({ group }: { group: string }) {
  const state = usePoll(async () => {
    const admin = cluster().admin;
    const [described, lag] = await Promise.all([admin.describeGroups([group]), admin.fetchGroupLag(group)]);
    return { group: described.groups[0], lag: [...lag].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition) };
  }, [group]);
  const [, navigate] = useLocation();
  const [to, setTo] = useState('earliest');
  const [deleteError, setDeleteError] = useState<unknown>();
  const total = state.data ? state.data.lag.reduce((s, l) => s + l.lag, 0) : undefined;
  const series = useSeries(state.at, total === undefined ? undefined : [total]);
  const topics = [...new Set(state.data?.lag.map((l) => l.topic) ?? [])];
  const g = state.data?.group;
  return (
    <Page title={group} sub={<p class="muted"><Link href="/groups">All groups</Link></p>} actions={
      <ConfirmButton label="Delete group" confirm={`Delete consumer group ${group} and its committed offsets?`} action={() => cluster().admin.deleteGroups([group])}
        onDone={() => navigate('/groups')} onError={setDeleteError} />
    }>
      <ErrorNote error={deleteError ?? (isNotFound(state.error) ? new Error(`Group ${group} does not exist.`) : state.error)} />
      {!state.data ? (state.error ? null : <Loading what="the group" />) : (
        <>
          <Stats items={[
            { label: 'State', value: g?.state ?? '—' },
            { label: 'Assignor', value: g?.protocol || '—' },
            { label: 'Members', value: fmt(g?.members.length ?? 0) },
            { label: 'Total lag', value: fmt(total), testId: 'total-lag', tone: total ? 'bad' : 'ok' },
          ]} />
          <TimeChart label="Lag over time" names={['total lag']} times={series.times} series={series.series} />
          <Table caption="Lag" rows={state.data.lag} rowKey={(l) => `${l.topic}/${l.partition}`} empty="No committed offsets." columns={[
            { label: 'Topic', cell: (l) => <Link href={`/topics/${encodeURIComponent(l.topic)}`}>{l.topic}</Link> },
            { label: 'Partition', cell: (l) => l.partition, numeric: true },
            { label: 'Committed offset', cell: (l) => fmt(l.currentOffset), numeric: true },
            { label: 'Log end offset', cell: (l) => fmt(l.logEndOffset), numeric: true },
            { label: 'Last stable offset', cell: (l) => fmt(l.lastStableOffset), numeric: true },
            { label: 'Lag', cell: (l) => fmt(l.lag), numeric: true },
            { label: 'Member', cell: (l) => (l.memberId ? <code>{l.memberId}</code> : '—') },
          ]} />
          <Table caption="Members" rows={g?.members ?? []} rowKey={(m) => m.memberId} empty="No members: the group is empty." columns={[
            { label: 'Member', cell: (m) => <code>{m.memberId}</code> },
            { label: 'Client', cell: (m) => m.clientId || '—' },
            { label: 'Epoch', cell: (m) => fmt(m.memberEpoch), numeric: true },
            { label: 'Assignment', cell: (m) => m.assignment.map((a) => `${a.topic}-${a.partition}`).join(', ') || '—' },
          ]} />
          <ActionForm label="Reset offsets" submit="Reset" class="inline" onDone={state.refresh} action={async (d) => {
            const value = String(d.get('value') ?? '');
            const target: ResetTo = to === 'earliest' || to === 'latest' ? to
              : to === 'offset' ? { offset: Number(value) } : to === 'timestamp' ? { timestamp: new Date(value).getTime() } : { shiftBy: Number(value) };
            const topic = String(d.get('topic'));
            const moved = await cluster().admin.resetOffsetsTo({ groupId: group, topics: topic === 'all' ? topics : [topic], to: target });
            return `Reset ${moved.length} partition${moved.length === 1 ? '' : 's'}: ${moved.map((m) => `${m.topic}-${m.partition} → ${m.offset}`).join(', ')}`;
          }}>
            <Field label="Topic">
              <select name="topic"><option value="all">All topics</option>{topics.map((t) => <option>{t}</option>)}</select>
            </Field>
            <Field label="To">
              <select name="to" value={to} onChange={(e) => setTo(e.currentTarget.value)}>
                <option value="earliest">Earliest</option>
                <option value="latest">Latest</option>
                <option value="offset">Offset</option>
                <option value="timestamp">Time</option>
                <option value="shift">Shift by</option>
              </select>
            </Field>
            {to !== 'earliest' && to !== 'latest' && (
              <Field label={to === 'offset' ? 'Offset' : to === 'timestamp' ? 'Time' : 'Shift'}>
                <input name="value" type={to === 'timestamp' ? 'datetime-local' : 'number'} required />
              </Field>
            )}
          </ActionForm>
        </>
      )}
    </Page>
  );
}
