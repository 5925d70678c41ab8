/**
 * The cluster: brokers (rack, state, replica and leader counts, bytes), the controller holding the
 * lease and its epoch, and the partitions that are under-replicated or offline. Metadata is read
 * every 2 s; the broker list, which sums every broker's table, every 10 s.
 */
import { Link } from 'wouter-preact';
import { cluster } from '../common/api.js';
import { ErrorNote, fmt, fmtBytes, fmtTime, ids, Loading, Page, Stats, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';

export function ClusterPage() {
  const meta = usePoll(() => cluster().admin.describeMetadata(), []);
  const brokers = usePoll(() => cluster().admin.describeCluster(), [], 10_000);
  const m = meta.data;
  const alive = new Set((m?.brokers ?? []).filter((b) => b.state === 'alive').map((b) => b.brokerId));
  const partitions = (m?.topics ?? []).flatMap((t) => t.partitions.map((p) => ({ topic: t.name, ...p })));
  const offline = partitions.filter((p) => p.leader < 0 || !alive.has(p.leader));
  const under = partitions.filter((p) => p.isr.length < p.replicas.length);
  const stateOf = new Map((m?.brokers ?? []).map((b) => [b.brokerId, b.state]));
  return (
    <Page title="Cluster" sub={<p class="muted">Cluster id <code>{brokers.data?.clusterId ?? m?.clusterId ?? '…'}</code>{meta.at && <> · updated {new Date(meta.at).toLocaleTimeString()}</>}</p>}>
      <ErrorNote error={meta.error ?? brokers.error} />
      {!m ? <Loading what="metadata" /> : (
        <Stats items={[
          { label: 'Controller', value: m.controller?.controllerId ?? 'none', testId: 'controller-id', tone: m.controller ? 'ok' : 'bad' },
          { label: 'Controller epoch', value: fmt(m.controller?.epoch ?? null), testId: 'controller-epoch' },
          { label: 'Lease expires', value: m.controller?.leaseExpiresAt ? fmtTime(m.controller.leaseExpiresAt) : '—' },
          { label: 'Brokers alive', value: `${alive.size} of ${m.brokers.length}`, tone: alive.size === m.brokers.length ? 'ok' : 'bad' },
          { label: 'Topics', value: fmt(m.topics.length) },
          { label: 'Partitions', value: fmt(partitions.length) },
          { label: 'Under-replicated partitions', value: fmt(under.length), testId: 'under-replicated-count', tone: under.length ? 'bad' : 'ok' },
          { label: 'Offline partitions', value: fmt(offline.length), testId: 'offline-count', tone: offline.length ? 'bad' : 'ok' },
        ]} />
      )}
      {brokers.data ? (
        <Table caption="Brokers" rows={brokers.data.brokers} rowKey={(b) => String(b.nodeId)} columns={[
          { label: 'Broker', cell: (b) => b.nodeId },
          { label: 'Rack', cell: (b) => b.rack ?? '—' },
          { label: 'State', cell: (b) => <span class={`badge ${(stateOf.get(b.nodeId) ?? b.state) === 'alive' ? 'ok' : 'bad'}`}>{stateOf.get(b.nodeId) ?? b.state ?? '—'}</span> },
          { label: 'Replicas', cell: (b) => fmt(b.replicaCount), numeric: true },
          { label: 'Leaders', cell: (b) => fmt(b.leaderCount), numeric: true },
          { label: 'Bytes (replica table)', cell: (b) => fmtBytes(b.bytes), numeric: true },
        ]} />
      ) : <Loading what="brokers" />}
      {m && (under.length > 0 || offline.length > 0) && (
        <Table caption="Partitions needing attention" rows={[...offline, ...under.filter((p) => !offline.includes(p))]} rowKey={(p) => `${p.topic}/${p.partitionId}`} columns={[
          { label: 'Partition', cell: (p) => <Link href={`/topics/${encodeURIComponent(p.topic)}/partitions/${p.partitionId}`}>{p.topic}-{p.partitionId}</Link> },
          { label: 'Problem', cell: (p) => (offline.includes(p) ? 'offline (no live leader)' : 'under-replicated') },
          { label: 'Leader', cell: (p) => (p.leader < 0 ? 'none' : p.leader) },
          { label: 'Replicas', cell: (p) => ids(p.replicas) },
          { label: 'ISR', cell: (p) => ids(p.isr) },
        ]} />
      )}
    </Page>
  );
}
