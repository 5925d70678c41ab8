/**
 * The docs must hold together for a reader who has only a clone: every relative link in README.md
 * and docs/ names a file that exists, and every `#anchor` (in-page or `file.md#anchor`) names a
 * heading of its target by GitHub's slug rules. External links (`http(s)://`, `mailto:`) are not
 * fetched; links inside code (fenced blocks, inline spans) are examples, not links.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** README.md and every Markdown file under docs/, as paths relative to the root. */
function markdownFiles(): string[] {
  const docs = fs.readdirSync(path.join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f))
    .sort();
  return ['README.md', ...docs];
}

/** The text with fenced code blocks blanked line by line (so line numbers still hold). */
function withoutFences(text: string): string {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return '';
    }
    if (marker) {
      fence = marker;
      return '';
    }
    return line;
  }).join('\n');
}

/** Inline code spans removed, keeping line breaks. */
const withoutCodeSpans = (text: string): string => text.replace(/``[^`]*``|`[^`\n]*`/g, (span) => span.replace(/[^\n]/g, ''));

/**
 * GitHub's heading slug (github-slugger): the heading's text as rendered (link and image markup
 * gone), lowercased, every character dropped that is not a letter, mark, number, connector (`_`),
 * space or hyphen, then spaces turned into hyphens.
 */
function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings, in order; a repeated slug gets `-1`, `-2`, ... as on GitHub. */
function anchorsOf(markdown: string): string[] {
  const occurrences = new Map<string, number>();
  const anchors: string[] = [];
  for (const line of withoutFences(markdown).split('\n')) {
    const m = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?[ \t]*$/.exec(line);
    if (!m) continue;
    const original = slugOf((m[1] ?? '').replace(/[ \t]+#+$/, ''));
    let slug = original;
    while (occurrences.has(slug)) {
      const n = (occurrences.get(original) ?? 0) + 1;
      occurrences.set(original, n);
      slug = `${original}-${n}`;
    }
    occurrences.set(slug, 0);
    anchors.push(slug);
  }
  return anchors;
}

interface Link {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

/** Every inline link and image of a file, outside code. */
function linksOf(file: string): Link[] {
  const text = withoutCodeSpans(withoutFences(fs.readFileSync(path.join(ROOT, file), 'utf8')));
  const links: Link[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)) {
    links.push({ file, line: text.slice(0, m.index).split('\n').length, target: m[1] ?? '' });
  }
  return links;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

const FILES = markdownFiles();
const LINKS = FILES.flatMap(linksOf);
const RELATIVE = LINKS.filter((l) => !isExternal(l.target));

/** The file a link points to, relative to the root ('' when it points into its own file). */
function targetFile(link: Link): string {
  const file = link.target.split('#')[0] ?? '';
  if (file === '') return link.file;
  return path.relative(ROOT, path.resolve(ROOT, path.dirname(link.file), decodeURIComponent(file)));
}

describe('Docs: links', () => {
  it('reads the README and every doc under docs/, links included', () => {
    expect(FILES).toContain('README.md');
    expect(FILES).toContain(path.join('docs', 'architecture.md'));
    expect(RELATIVE.length).toBeGreaterThan(50);
  });

  it('slugs headings as GitHub does, numbering repeated ones', () => {
    expect(slugOf("Kafka's roles, mapped")).toBe('kafkas-roles-mapped');
    expect(slugOf('The local stack with `--auth`')).toBe('the-local-stack-with---auth');
    expect(slugOf('Seeing the tiers: `GET …/partitions/{partition_id}/segments`')).toBe('seeing-the-tiers-get-partitionspartition_idsegments');
    expect(slugOf('A failed deploy, `cdk destroy`, and deploying again')).toBe('a-failed-deploy-cdk-destroy-and-deploying-again');
    expect(slugOf('See [the API](http-api.md) — 2 × faster')).toBe('see-the-api--2--faster');
    expect(anchorsOf('# Title\n## Notes\n```\n# not a heading\n```\n## Notes\n### Notes\n')).toEqual(['title', 'notes', 'notes-1', 'notes-2']);
  });

  it('resolves every relative link to a file or folder that exists', () => {
    const missing = RELATIVE
      .filter((l) => !fs.existsSync(path.join(ROOT, targetFile(l))))
      .map((l) => `${l.file}:${l.line}: ${l.target}`);
    expect(missing).toEqual([]);
  });

  it("matches every #anchor to a heading of its target by GitHub's slug rules", () => {
    const anchors = new Map<string, string[]>();
    const headingsOf = (file: string): string[] => {
      let found = anchors.get(file);
      if (!found) {
        found = anchorsOf(fs.readFileSync(path.join(ROOT, file), 'utf8'));
        anchors.set(file, found);
      }
      return found;
    };
    const broken = RELATIVE
      .filter((l) => l.target.includes('#'))
      .filter((l) => targetFile(l).endsWith('.md') && fs.existsSync(path.join(ROOT, targetFile(l))))
      .filter((l) => !headingsOf(targetFile(l)).includes(decodeURIComponent(l.target.slice(l.target.indexOf('#') + 1))))
      .map((l) => `${l.file}:${l.line}: ${l.target}`);
    expect(broken).toEqual([]);
  });
});
