/** Consumer groups: each with its state, members and total lag. */
import { Link } from 'wouter-preact';
import { cluster } from '../common/api.js';
import { ErrorNote, fmt, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';

export function GroupsPage() {
  const groups = usePoll(async () => {
    const admin = cluster().admin;
    const { groups: list } = await admin.listGroups();
    const lags = await Promise.all(list.map((g) => admin.fetchGroupLag(g.groupId).then((l) => l.reduce((s, x) => s + x.lag, 0)).catch(() => null)));
    return list.map((g, i) => ({ ...g, lag: lags[i] ?? null })).sort((a, b) => a.groupId.localeCompare(b.groupId));
  }, [], 5_000);
  return (
    <Page title="Consumer groups">
      <ErrorNote error={groups.error} />
      {!groups.data ? <Loading what="groups" /> : (
        <Table caption="Consumer groups" rows={groups.data} rowKey={(g) => g.groupId} empty="No consumer groups yet." columns={[
          { label: 'Group', cell: (g) => <Link href={`/groups/${encodeURIComponent(g.groupId)}`}>{g.groupId}</Link> },
          { label: 'State', cell: (g) => g.state },
          { label: 'Total lag', cell: (g) => fmt(g.lag), numeric: true },
        ]} />
      )}
    </Page>
  );
}
