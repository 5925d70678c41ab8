/**
 * The import graph of the source files (tests aside), as docs/architecture.md's "Layers" draws it:
 * no file imports itself through others, and no folder does either — ESLint's import-x/no-cycle
 * sees files only, and its no-restricted-paths zones cover lib/'s floors, not every folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const SOURCE_DIRS = ['lib', 'lambdas', 'client', 'cli', 'local', 'chaos', 'build', 'cdk', 'console', 'bench', 'bin'];
const IMPORT = /(?:^|\s)(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { if (e.name !== 'node_modules' && e.name !== 'results') walk(p); }
      else if (/\.(ts|tsx|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(path.relative(ROOT, p));
    }
  };
  for (const d of SOURCE_DIRS) if (fs.existsSync(path.join(ROOT, d))) walk(path.join(ROOT, d));
  return out;
}

/** Each file's relative imports, resolved to files (`.js` specifiers name `.ts` sources). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    const targets = new Set<string>();
    for (const m of text.matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2]) as string;
      const base = path.normalize(path.join(path.dirname(f), spec)).replace(/\.(js|mjs)$/, '');
      const hit = ['.ts', '.tsx', '.js', '.mjs', '/index.ts'].map((e) => base + e).find((c) => known.has(c));
      if (hit) targets.add(hit);
    }
    graph.set(f, [...targets]);
  }
  return graph;
}

/** The strongly connected components with more than one node (Tarjan): each is a circle. */
function circles(nodes: readonly string[], next: (n: string) => readonly string[]): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return found;
}

describe('Structure: the import graph', () => {
  const files = sourceFiles();
  const graph = importGraph(files);

  it('reads the whole source tree, and resolves the imports it finds', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(graph.get('lambdas/produce.ts')).toContain('lib/http/handler.ts');
  });

  it('has no circle between files', () => {
    expect(circles(files, (f) => graph.get(f) ?? [])).toEqual([]);
  });

  it('has no circle between folders', () => {
    const folder = (f: string) => path.dirname(f);
    const edges = new Map<string, Set<string>>();
    for (const [f, targets] of graph) {
      for (const t of targets) if (folder(t) !== folder(f)) edges.set(folder(f), (edges.get(folder(f)) ?? new Set()).add(folder(t)));
    }
    const folders = [...new Set(files.map(folder))];
    expect(circles(folders, (d) => [...(edges.get(d) ?? [])])).toEqual([]);
  });

  it('keeps lib/ free of the apps, and the SDK free of all but lib/protocol (its schemas entry: and the parsers of lib/schemas)', () => {
    const apps = ['client/', 'cli/', 'local/', 'chaos/', 'build/', 'cdk/', 'console/', 'bench/', 'bin/', 'lambdas/'];
    const schemasEntry = ['client/schemas.ts', 'client/schema-registry.ts'];
    const parsers = /^lib\/(schemas\/(avro|json-schema|json-compat|protobuf|compatibility|model|errors|wire-format)|bounded-cache|errors)\.ts$/;
    for (const [f, targets] of graph) {
      if (f.startsWith('lib/')) expect(targets.filter((t) => apps.some((a) => t.startsWith(a))), f).toEqual([]);
      const allowed = (t: string) => t.startsWith('client/') || t.startsWith('lib/protocol/') || (schemasEntry.includes(f) && parsers.test(t));
      if (f.startsWith('client/')) expect(targets.filter((t) => !allowed(t)), f).toEqual([]);
    }
    // Everything the core entry reaches, however indirectly: no parser of lib/schemas.
    const reached = new Set<string>();
    const reach = (f: string) => { if (!reached.has(f)) { reached.add(f); for (const t of graph.get(f) ?? []) reach(t); } };
    reach('client/index.ts');
    expect([...reached].filter((f) => f.startsWith('lib/') && !f.startsWith('lib/protocol/'))).toEqual([]);
  });

  it('finds a circle when there is one (the check can fail)', () => {
    const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    expect(circles([...g.keys()], (n) => g.get(n) ?? [])).toEqual([['a', 'b', 'c']]);
  });
});
