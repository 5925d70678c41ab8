/** The links between a topic's pages. */
import { Link, useLocation } from 'wouter-preact';

export function TopicNav({ topic }: { topic: string }) {
  const [path] = useLocation();
  const base = `/topics/${encodeURIComponent(topic)}`;
  const links = [
    { href: base, label: 'Partitions' },
    { href: `${base}/messages`, label: 'Messages' },
    { href: `${base}/produce`, label: 'Produce' },
    { href: `${base}/configs`, label: 'Configs' },
  ];
  return (
    <nav aria-label="Topic" class="subnav">
      <Link href="/topics">All topics</Link>
      {links.map((l) => <Link href={l.href} aria-current={path === l.href ? 'page' : undefined}>{l.label}</Link>)}
    </nav>
  );
}
