#!/usr/bin/env node
// The `intake` command. In production it runs the compiled service (dist/, from `npm run build`) in
// this very process: no TypeScript loader, no second process. Without dist/ (a development checkout)
// it runs the TypeScript sources through tsx instead.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'main.js');

if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const tsx = createRequire(import.meta.url).resolve('tsx/cli');
  const result = spawnSync(process.execPath, [tsx, join(root, 'src', 'main.ts'), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}
