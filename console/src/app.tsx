/**
 * The console: a sign-in gate (when the API asks for credentials), the navigation, and the pages,
 * routed by the URL's hash so the static files need no server-side routing.
 */
import { useEffect, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import { useHashLocation } from 'wouter-preact/use-hash-location';
import { loadConfig, onUnauthorized, resetCluster, session, type ConsoleConfig } from './common/api.js';
import { completeOidcLogin, SignIn } from './pages/sign-in.js';
import { ClusterPage } from './pages/cluster.js';
import { TopicsPage } from './pages/topics.js';
import { TopicPage } from './pages/topic.js';
import { PartitionPage } from './pages/partition.js';
import { MessagesPage } from './pages/messages.js';
import { ProducePage } from './pages/produce.js';
import { ConfigsPage } from './pages/configs.js';
import { GroupsPage } from './pages/groups.js';
import { GroupPage } from './pages/group.js';
import { AclsPage } from './pages/acls.js';
import { SchemasPage } from './pages/schemas.js';
import { SubjectPage } from './pages/subject.js';

const NAV = [
  { href: '/', label: 'Cluster', match: (p: string) => p === '/' },
  { href: '/topics', label: 'Topics', match: (p: string) => p.startsWith('/topics') },
  { href: '/groups', label: 'Consumer groups', match: (p: string) => p.startsWith('/groups') },
  { href: '/schemas', label: 'Schemas', match: (p: string) => p.startsWith('/schemas') },
  { href: '/acls', label: 'ACLs', match: (p: string) => p.startsWith('/acls') },
];

function Nav({ config, onSignOut }: { config: ConsoleConfig; onSignOut: () => void }) {
  const [path] = useLocation();
  return (
    <header class="top">
      <a class="brand" href="#/">Tributary</a>
      <nav aria-label="Main">
        <ul>
          {NAV.map((n) => (
            <li><Link href={n.href} aria-current={n.match(path) ? 'page' : undefined}>{n.label}</Link></li>
          ))}
        </ul>
      </nav>
      {config.auth !== 'none' && session.token && <button type="button" class="link" onClick={onSignOut}>Sign out</button>}
    </header>
  );
}

const decode = (params: Record<string, string | undefined>, k: string): string => decodeURIComponent(params[k] ?? '');

export function App() {
  const [config, setConfig] = useState<ConsoleConfig | undefined>();
  const [signedIn, setSignedIn] = useState(false);

  useEffect(() => {
    void (async () => {
      const c = await loadConfig();
      if (c.auth === 'jwt' && c.oidc) await completeOidcLogin(c.oidc).catch(() => undefined);
      setConfig(c);
      setSignedIn(c.auth === 'none' || session.token !== null);
    })();
    const on401 = () => {
      session.token = null;
      resetCluster();
      setSignedIn(false);
    };
    onUnauthorized.addEventListener('401', on401);
    return () => onUnauthorized.removeEventListener('401', on401);
  }, []);

  if (!config) return <main id="main"><p class="muted">Loading…</p></main>;
  if (!signedIn) {
    return <SignIn config={config} onSignedIn={() => {
      resetCluster();
      setSignedIn(true);
    }} />;
  }
  const signOut = () => {
    session.token = null;
    resetCluster();
    setSignedIn(false);
  };
  return (
    <Router hook={useHashLocation}>
      <a class="skip" href="#main" onClick={(e) => {
        e.preventDefault();
        document.getElementById('main')?.focus();
      }}>Skip to content</a>
      <Nav config={config} onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        <Switch>
          <Route path="/">{() => <ClusterPage />}</Route>
          <Route path="/topics">{() => <TopicsPage />}</Route>
          <Route path="/topics/:topic">{(p) => <TopicPage topic={decode(p, 'topic')} />}</Route>
          <Route path="/topics/:topic/partitions/:partition">{(p) => <PartitionPage topic={decode(p, 'topic')} partition={Number(p.partition)} />}</Route>
          <Route path="/topics/:topic/messages">{(p) => <MessagesPage topic={decode(p, 'topic')} live={config.auth !== 'iam'} />}</Route>
          <Route path="/topics/:topic/produce">{(p) => <ProducePage topic={decode(p, 'topic')} />}</Route>
          <Route path="/topics/:topic/configs">{(p) => <ConfigsPage topic={decode(p, 'topic')} />}</Route>
          <Route path="/groups">{() => <GroupsPage />}</Route>
          <Route path="/groups/:group">{(p) => <GroupPage group={decode(p, 'group')} />}</Route>
          <Route path="/schemas">{() => <SchemasPage />}</Route>
          <Route path="/schemas/:subject">{(p) => <SubjectPage subject={decode(p, 'subject')} />}</Route>
          <Route path="/schemas/:subject/versions/:version">{(p) => <SubjectPage subject={decode(p, 'subject')} version={Number(p.version)} />}</Route>
          <Route path="/acls">{() => <AclsPage security={config.auth !== 'none'} />}</Route>
          <Route>{() => <section class="page"><h1>Not found</h1><p>No page here. <Link href="/">Back to the cluster</Link>.</p></section>}</Route>
        </Switch>
      </main>
    </Router>
  );
}
