/**
 * Docs and comments describe the system as it is; its history lives in git. No file of the
 * project's own text — README, docs, source and tests — points a reader at a tracker issue, a
 * commit or a past fresh-clone run ("issue 12", "(commit a66a4c6)", "fc37").
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const DIRS = ['docs', 'lib', 'lambdas', 'client', 'cli', 'local', 'chaos', 'build', 'cdk', 'console', 'bench', 'bin', 'test'];
const SKIP = new Set(['node_modules', 'results', 'artifacts', 'fixtures', 'conformance']);
const HISTORY = [
  { what: 'an issue number', re: /\bissues? #?\d+\b/i },
  { what: 'a commit id', re: /\bcommits? [0-9a-f]{7,40}\b/i },
  { what: 'a fresh-clone run', re: /\bfc\d{2}\b/ },
];

function textFiles(): string[] {
  const out = ['README.md'];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { if (!SKIP.has(e.name)) walk(p); }
      else if (/\.(md|ts|tsx|js|mjs|css|html)$/.test(e.name)) out.push(p);
    }
  };
  for (const d of DIRS) if (fs.existsSync(path.join(ROOT, d))) walk(d);
  return out;
}

/** Every line of `text` that cites history, as `file:line: text`. */
export function historyCitations(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) =>
    HISTORY.filter((h) => h.re.test(line)).map((h) => `${file}:${i + 1}: ${h.what}: ${line.trim()}`));
}

describe('Structure: docs and comments without history', () => {
  it('finds an issue number, a commit id and a fresh-clone run where they are (the check can fail)', () => {
    expect(historyCitations('x.ts', '// see issue 12\n// (commit a66a4c6)\n// fc37 took 699 s\n// Kafka issue-free text')).toHaveLength(3);
  });

  it('cites no issue, commit or past run in README.md, docs/, the source or the tests', () => {
    const self = path.relative(ROOT, import.meta.filename);
    const found = textFiles().filter((f) => f !== self).flatMap((f) => historyCitations(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });
});
