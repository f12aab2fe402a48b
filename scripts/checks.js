#!/usr/bin/env node
// The static checks of `npm test`, side by side: the type check, the linter and the format check each
// run in their own process (each uses one core), and their output is printed whole, one after the
// other, once all have finished. Exits 1 if any failed.
//
//   node scripts/checks.js
import { spawn } from 'node:child_process';
import console from 'node:console';
import process from 'node:process';
import { performance } from 'node:perf_hooks';

const CHECKS = ['typecheck', 'lint', 'format:check'];
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(script) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ script, code: 1, output: `${output}${error.message}\n`, ms: 0 }));
    child.on('close', (code) =>
      resolve({ script, code: code ?? 1, output, ms: Math.round(performance.now() - started) }),
    );
  });
}

const results = await Promise.all(CHECKS.map(run));
for (const { script, code, output, ms } of results) {
  console.log(`${code === 0 ? 'passed' : 'FAILED'}: npm run ${script} (${(ms / 1000).toFixed(1)} s)`);
  if (output.trim()) console.log(output.trimEnd());
}
process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;
