/**
 * buildConsole (console/build.ts): one esbuild call writes content-hashed files and an index.html
 * that loads them, and reports every file's size, raw and gzipped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { buildConsole, buildConsoleSync } from '../../../build/console.js';

const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/console');
const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-console-build-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const fixture = { entry: path.join(FIXTURE, 'main.ts'), template: path.join(FIXTURE, 'index.html') };

describe('Method: buildConsole', () => {
  it('writes app-<hash>.js, app-<hash>.css and a chunk for the dynamic import, and an index.html that loads the hashed names', async () => {
    const out = tmp();
    const b = await buildConsole(out, fixture);
    expect(b.js).toMatch(/^app-[A-Z0-9]{8}\.js$/);
    expect(b.css).toMatch(/^app-[A-Z0-9]{8}\.css$/);
    const names = b.files.map((f) => f.path);
    expect(names[0]).toBe('index.html');
    expect(names).toEqual(expect.arrayContaining([b.js, b.css]));
    expect(names.some((n) => /^chunks\/lazy-[A-Z0-9]{8}\.js$/.test(n)), names.join(' ')).toBe(true);
    const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
    expect(html).toContain(`<script type="module" src="./${b.js}"></script>`);
    expect(html).toContain(`<link rel="stylesheet" href="./${b.css}">`);
    expect(html).not.toMatch(/\.\/app\.(js|css)"/);
    // Minified ES2022 modules: the dynamic import stays an import().
    const js = fs.readFileSync(path.join(out, b.js), 'utf8');
    expect(js).toMatch(/import\("\.\/chunks\/lazy-[A-Z0-9]{8}\.js"\)/);
    expect(js.split('\n').length).toBeLessThan(5);
    expect(fs.readFileSync(path.join(out, b.css as string), 'utf8')).toContain('system-ui');
  });

  it('reports each file\'s size and gzipped size, and the totals', async () => {
    const out = tmp();
    const b = await buildConsole(out, fixture);
    expect(fs.readdirSync(out, { recursive: true }).filter((f) => fs.statSync(path.join(out, String(f))).isFile()).length).toBe(b.files.length);
    for (const f of b.files) {
      const bytes = fs.readFileSync(path.join(out, f.path));
      expect(f.bytes, f.path).toBe(bytes.length);
      expect(f.gzipBytes, f.path).toBe(gzipSync(bytes, { level: 9 }).length);
    }
    expect(b.totalBytes).toBe(b.files.reduce((n, f) => n + f.bytes, 0));
    expect(b.totalGzipBytes).toBe(b.files.reduce((n, f) => n + f.gzipBytes, 0));
  });

  it('names files by their content: the same sources build the same names, synchronously too, and old files are removed', async () => {
    const out = tmp();
    fs.writeFileSync(path.join(out, 'app-OLDHASH1.js'), 'stale');
    const a = await buildConsole(out, fixture);
    const b = buildConsoleSync(out, fixture);
    expect(b.files.map((f) => [f.path, f.bytes])).toEqual(a.files.map((f) => [f.path, f.bytes]));
    expect(fs.existsSync(path.join(out, 'app-OLDHASH1.js'))).toBe(false);
  });

  it('builds the real console (console/src/main.tsx) in under 2 s, with no link to styles it does not have', async () => {
    const out = tmp();
    const b = await buildConsole(out);
    expect(b.ms).toBeLessThan(2000);
    const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
    expect(html).toContain(`src="./${b.js}"`);
    if (b.css) expect(html).toContain(`href="./${b.css}"`);
    else expect(html).not.toContain('stylesheet');
  });

  it('refuses a template that does not load ./app.js', async () => {
    const out = tmp();
    const template = path.join(out, 'bad.html');
    fs.writeFileSync(template, '<script src="main.js"></script>');
    await expect(buildConsole(path.join(out, 'dist'), { ...fixture, template })).rejects.toThrow(/must load the app as "\.\/app\.js"/);
  });
});
