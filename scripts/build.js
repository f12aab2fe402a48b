#!/usr/bin/env node
// The production build: every module of src/ compiled to plain JavaScript in dist/ (one file per
// module, the same layout), plus the files read at run time (the translations) and the browser
// bundles of web/ (dist/web/<name>/). Type checking is `npm run typecheck`'s job; this only strips
// the types, so it takes about a second.
//
//   node scripts/build.js [--out DIR]     (default: dist)
import { cpSync, readdirSync, rmSync } from 'node:fs';
import console from 'node:console';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const out = resolve(outFlag >= 0 ? (process.argv[outFlag + 1] ?? 'dist') : join(root, 'dist'));
const src = join(root, 'src');

/** The modules to compile: every .ts under src/ but the unit tests beside them. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const started = performance.now();
rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: sources(src),
  outdir: out,
  outbase: src,
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
cpSync(join(src, 'i18n', 'locales'), join(out, 'i18n', 'locales'), { recursive: true });
// The browser scripts and stylesheets, bundled now so the service does not bundle them at start-up.
// The modules that declare them are imported from the build (declaring is all they do on import).
for (const declaring of ['modules/portal/page/assets.js', 'modules/dashboard/assets.js'])
  await import(pathToFileURL(join(out, declaring)).href);
const { prebuildWebAssets } = await import(pathToFileURL(join(out, 'lib', 'web-assets.js')).href);
const bundles = await prebuildWebAssets(join(out, 'web'));
const ms = Math.round(performance.now() - started);
console.log(`Built ${relative(process.cwd(), out) || '.'} (web bundles: ${bundles.join(', ')}) in ${ms} ms`);
