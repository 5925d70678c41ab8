#!/usr/bin/env node
// The `tributary` CLI: the compiled one when the package is built (npm pack builds it), else the
// TypeScript sources through tsx (a checkout).
import { existsSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';

const built = new URL('../dist/package/cli/main.js', import.meta.url);
if (existsSync(fileURLToPath(built))) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../cli/main.ts', import.meta.url).href);
}
