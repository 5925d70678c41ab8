/**
 * The package another project installs: `npm pack` builds it (prepack) into ES modules with type
 * declarations behind an `exports` map, and a project that has the tarball's contents under
 * node_modules/tributary imports `{ Tributary }` with plain Node and runs `tributary --help`.
 * The tarball holds the SDK and the CLI only, none of the server.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../..', import.meta.url).pathname;
const hasNpm = spawnSync('npm', ['--version']).status === 0;

describe.skipIf(!hasNpm)('npm pack', () => {
  it('makes a tarball of compiled ES modules and declarations that a plain Node project imports', () => {
    // Inside the checkout (.tributary is ignored by git), so the tarball's dependencies resolve from
    // the checkout's node_modules: this machine installs nothing from the registry at test time.
    mkdirSync(join(root, '.tributary'), { recursive: true });
    const dir = mkdtempSync(join(root, '.tributary', 'pack-'));
    try {
      execFileSync('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: root, stdio: 'pipe' });
      const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz')) as string;
      const files = execFileSync('tar', ['tzf', join(dir, tgz)], { encoding: 'utf8' }).trim().split('\n');
      expect(files).toContain('package/dist/package/client/index.js');
      expect(files).toContain('package/dist/package/client/index.d.ts');
      expect(files).toContain('package/bin/tributary.js');
      // (`tributary users add` writes the local stack's credentials file: that one module, which imports node:fs and node:crypto only, ships.)
      const shipped = (f: string) => f.endsWith('/local/credentials.js') || f.endsWith('/local/credentials.d.ts');
      expect(files.filter((f) => /\/(storage|log|cluster|groups|http|local|orchestration|cdk|lambdas)\//.test(f) && !shipped(f))).toEqual([]);

      const project = join(dir, 'project');
      mkdirSync(join(project, 'node_modules', 'tributary'), { recursive: true });
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-tributary', private: true, type: 'module' }));
      execFileSync('tar', ['xzf', join(dir, tgz), '-C', join(project, 'node_modules', 'tributary'), '--strip-components=1']);
      const out = execFileSync(process.execPath, ['-e', `
        const m = await import('tributary');
        const t = new m.Tributary({ url: 'http://127.0.0.1:1' });
        console.log(JSON.stringify({ producer: typeof t.producer(), consumer: typeof t.consumer({ groupId: 'g' }), admin: typeof t.admin() }));
      `, '--input-type=module'], { cwd: project, encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ producer: 'object', consumer: 'object', admin: 'object' });
      const help = execFileSync(process.execPath, [join(project, 'node_modules', 'tributary', 'bin', 'tributary.js'), '--help'], { cwd: project, encoding: 'utf8' });
      expect(help).toMatch(/Usage: tributary/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
