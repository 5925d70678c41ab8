/**
 * One partition: its replicas (role, in sync, log start and end, lag), the last stable offset (below
 * the high watermark while a transaction is open), the high watermark moving
 * (a chart of every replica's log end offset and the high watermark while the page is open), and
 * its log segments in S3.
 */
import { cluster } from '../common/api.js';
import { TimeChart } from '../common/chart.js';
import { ErrorNote, fmt, fmtBytes, fmtTime, ids, Loading, Page, Stats, Table } from '../common/components.js';
import { usePoll, useSeries } from '../common/poll.js';
import { TopicNav } from './topic-nav.js';

export function PartitionPage({ topic, partition }: { topic: string; partition: number }) {
  const parts = usePoll(() => cluster().admin.describePartitions(topic), [topic]);
  const tiers = usePoll(() => cluster().admin.describeLogTiers(topic, partition), [topic, partition], 10_000);
  const p = parts.data?.find((x) => x.partitionId === partition);
  const brokers = p ? [...p.replicas].sort((a, b) => a - b) : [];
  const series = useSeries(parts.at, p ? [p.highWatermark, ...brokers.map((b) => p.replicaStates.find((r) => r.brokerId === b)?.logEndOffset ?? null)] : undefined);
  return (
    <Page title={`${topic} / partition ${partition}`} sub={<TopicNav topic={topic} />}>
      <ErrorNote error={parts.error} />
      {!parts.data ? <Loading what="the partition" /> : !p ? <p class="error" role="alert">{topic} has no partition {partition}.</p> : (
        <>
          <Stats items={[
            { label: 'Leader', value: p.leader < 0 ? 'none' : p.leader, testId: 'leader', tone: p.leader < 0 ? 'bad' : 'ok' },
            { label: 'Leader epoch', value: fmt(p.leaderEpoch), testId: 'leader-epoch' },
            { label: 'ISR', value: ids(p.isr), testId: 'isr', tone: p.isr.length < p.replicas.length ? 'bad' : 'ok' },
            { label: 'High watermark', value: fmt(p.highWatermark), testId: 'hw' },
            { label: 'Last stable offset', value: fmt(p.lastStableOffset), testId: 'lso' },
            { label: 'Log start', value: fmt(p.logStartOffset) },
            { label: 'Log end', value: fmt(p.logEndOffset) },
          ]} />
          <Table caption="Replicas" rows={p.replicaStates} rowKey={(r) => String(r.brokerId)} columns={[
            { label: 'Broker', cell: (r) => r.brokerId },
            { label: 'Role', cell: (r) => (r.isLeader ? 'leader' : 'follower') },
            { label: 'In sync', cell: (r) => <span class={`badge ${r.isInSync ? 'ok' : 'bad'}`}>{r.isInSync ? 'yes' : 'no'}</span> },
            { label: 'State', cell: (r) => r.state },
            { label: 'Log start', cell: (r) => fmt(r.logStartOffset), numeric: true },
            { label: 'Log end', cell: (r) => fmt(r.logEndOffset), numeric: true },
            { label: 'Lag', cell: (r) => fmt(r.lag), numeric: true },
          ]} />
          <TimeChart label="Log end offsets and high watermark over time" names={['high watermark', ...brokers.map((b) => `broker ${b}`)]} times={series.times} series={series.series} />
        </>
      )}
      <ErrorNote error={tiers.error} />
      {tiers.data ? (
        <>
        <p class="note" data-testid="tiers">
          {tiers.data.segments.length === 0 || tiers.data.localLogStartOffset === tiers.data.logStartOffset
            ? <>Offsets {fmt(tiers.data.logStartOffset)} to {fmt(tiers.data.logEndOffset)} are all in the replicas' tables; none has moved to S3 yet.</>
            : <>Offsets {fmt(tiers.data.logStartOffset)} to {fmt(tiers.data.localLogStartOffset)} are in S3 segments; from {fmt(tiers.data.localLogStartOffset)} to the log end ({fmt(tiers.data.logEndOffset)}) in the replicas' tables.</>}
        </p>
        <Table caption="Segments in S3" rows={tiers.data.segments} rowKey={(s) => String(s.baseOffset)} empty="No segments yet: every record is still in the replicas' tables." columns={[
          { label: 'Base offset', cell: (s) => fmt(s.baseOffset), numeric: true },
          { label: 'End offset', cell: (s) => fmt(s.endOffset), numeric: true },
          { label: 'Records', cell: (s) => fmt(s.recordCount), numeric: true },
          { label: 'Size', cell: (s) => fmtBytes(s.sizeBytes), numeric: true },
          { label: 'First timestamp', cell: (s) => fmtTime(s.minTimestamp) },
          { label: 'Last timestamp', cell: (s) => fmtTime(s.maxTimestamp) },
          { label: 'Object', cell: (s) => <code>{s.objectKey}</code> },
        ]} />
        </>
      ) : !tiers.error && <Loading what="segments" />}
    </Page>
  );
}
