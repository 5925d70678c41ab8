/** `npm run bench -- <name>`: runs bench/<name>.ts (every benchmark when no name is given). */
import { readdirSync } from 'node:fs';
import path from 'node:path';

const names = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const all = readdirSync(import.meta.dirname).filter((f) => f.endsWith('.ts') && f !== 'run.ts' && f !== 'prices.ts').map((f) => f.replace(/\.ts$/, ''));
for (const name of names.length > 0 ? names : all) {
  if (!all.includes(name)) throw new Error(`no benchmark named ${name}; have: ${all.join(', ')}`);
  process.stdout.write(`\n## ${name}\n`);
  await import(path.join(import.meta.dirname, `${name}.ts`));
}
