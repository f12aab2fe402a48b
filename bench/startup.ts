/**
 * How long `node bin/intake.js serve` takes to listen (fresh SQLite DATA_DIR, a free port), the
 * median of RUNS starts, on the checkout at BENCH_ROOT (default: this one). Shows that what is
 * loaded only when first needed (jsdom and DOMPurify for SVG uploads) adds nothing to start-up.
 *
 *   npx tsx bench/startup.ts
 *   BENCH_ROOT=/path/to/other/checkout npx tsx bench/startup.ts
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const root = resolve(process.env.BENCH_ROOT ?? '.');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

async function startOnce(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-startup-'));
  const started = performance.now();
  const child = spawn(process.execPath, [join(root, 'bin', 'intake.js'), 'serve'], {
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  try {
    return await new Promise<number>((resolveReady, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        if (line.includes('listening on')) resolveReady(performance.now() - started);
      });
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
    });
  } finally {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
}

const times: number[] = [];
for (let i = 0; i < RUNS; i++) times.push(await startOnce());
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)] ?? 0;
console.log(`ready in ${Math.round(median)} ms (median of ${RUNS}; ${times.map(Math.round).join(', ')})`);
