/**
 * `npm run bench`: runs every benchmark script, each in a child process of its own, one after another,
 * and ends with one table of every ratio it printed (bench/result.ts), its goal, baseline, rounds and
 * median. See bench/README.md, "npm run bench".
 *
 * Exits non-zero when a script fails (exit status, signal, time-out) or prints no result; a missed goal
 * is reported, not an error. BENCH_ONLY=webhooks,reminders picks a subset (an unknown name stops at
 * once); BENCH_QUICK=1 asks every script for a short run; BENCH_SCRIPT_TIMEOUT_MINUTES (default 30)
 * bounds each script.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { figureOf, meetsGoal, parseResults, QUICK, type BenchResult } from './result.js';

interface Bench {
  name: string;
  script: string;
  what: string;
}

/** In the order they run. */
const BENCHES: readonly Bench[] = [
  { name: 'reads', script: 'run.ts', what: 'authenticated reads against a bare Fastify route' },
  { name: 'writes', script: 'writes.ts', what: 'POST /v1/intakes against a bare transactional insert' },
  { name: 'memory', script: 'memory.ts', what: 'the API process RSS under load and during an upload' },
  { name: 'webhooks', script: 'webhooks.ts', what: 'webhook drains and bursts against a bare fetch loop' },
  { name: 'reminders', script: 'reminders.ts', what: 'reminders against a plain nodemailer loop' },
  { name: 'workers', script: 'workers.ts', what: 'worker CPU per job, one against three workers' },
  {
    name: 'scale',
    script: 'growth.ts',
    what: 'creation, status, list, claim, scrape at 1,000 and many intakes',
  },
  { name: 'claims', script: 'claims.ts', what: 'a claim beside an endpoint 1,000 and many attempts behind' },
];

const here = dirname(fileURLToPath(import.meta.url));
const timeoutMs = Number(process.env.BENCH_SCRIPT_TIMEOUT_MINUTES ?? '30') * 60_000;

function chosen(): Bench[] {
  const only = process.env.BENCH_ONLY?.trim();
  if (!only) return [...BENCHES];
  const names = only.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !BENCHES.some((b) => b.name === name));
  if (unknown.length > 0) {
    console.error(
      `BENCH_ONLY names unknown benchmarks: ${unknown.join(', ')} (known: ${BENCHES.map((b) => b.name).join(', ')})`,
    );
    process.exit(2);
  }
  return BENCHES.filter((b) => names.includes(b.name));
}

interface Outcome {
  bench: Bench;
  results: BenchResult[];
  /** Why the script counts as failed, if it does. */
  failure: string | undefined;
  seconds: number;
}

/** Runs one script through tsx, its output passed through, and collects its result lines. */
function runScript(bench: Bench): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, bench.script)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    let output = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    let timedOut = false;
    const guard = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    }, timeoutMs);
    const finish = (failure: string | undefined) => {
      clearTimeout(guard);
      const { results, errors } = parseResults(output);
      const problems = [
        ...(failure ? [failure] : []),
        ...errors.map((e) => `a malformed result line (${e})`),
        ...(results.length === 0 ? ['no BENCH_RESULT line'] : []),
      ];
      resolve({
        bench,
        results,
        failure: problems.length > 0 ? problems.join('; ') : undefined,
        seconds: (performance.now() - started) / 1000,
      });
    };
    child.on('error', (error) => finish(`could not start: ${error.message}`));
    child.on('exit', (code, signal) => {
      if (timedOut) finish(`stopped after ${timeoutMs / 60_000} minutes`);
      else if (signal) finish(`killed by ${signal}`);
      else if (code !== 0) finish(`exited with status ${code}`);
      else finish(undefined);
    });
  });
}

function table(outcomes: readonly Outcome[]): string {
  const rows = [
    '| bench | measure | goal | baseline | service/s | baseline/s | rounds | median | met |',
    '| --- | --- | ---: | --- | ---: | ---: | --- | ---: | :-: |',
  ];
  const format = (n: number | undefined) => (n === undefined ? '' : n.toLocaleString('en-US'));
  for (const { bench, results, failure } of outcomes) {
    for (const r of results) {
      const figure = figureOf(r);
      const met = meetsGoal(r.goal, figure);
      const shown = r.median !== undefined ? format(r.median) : `${format(r.value)} ${r.unit ?? ''}`.trim();
      rows.push(
        `| ${bench.name} | ${r.name} | ${r.goal} | ${r.baseline} | ${format(r.service_rps)} | ${format(r.baseline_rps)} | ${(r.rounds ?? []).join(', ')} | ${shown} | ${met === undefined ? '?' : met ? 'yes' : 'no'} |`,
      );
    }
    if (failure) rows.push(`| ${bench.name} | **failed**: ${failure} | | | | | | | |`);
  }
  return rows.join('\n');
}

async function main(): Promise<void> {
  const benches = chosen();
  const load = { before: loadavg()[0] ?? 0, after: 0 };
  const outcomes: Outcome[] = [];
  for (const bench of benches) {
    console.error(`\n== ${bench.name}: ${bench.what} (bench/${bench.script}${QUICK ? ', quick' : ''})`);
    const outcome = await runScript(bench);
    console.error(
      `== ${bench.name}: ${outcome.failure ? `FAILED (${outcome.failure})` : `${outcome.results.length} result(s)`} in ${Math.round(outcome.seconds)} s`,
    );
    outcomes.push(outcome);
  }
  load.after = loadavg()[0] ?? 0;
  console.log(`\n## npm run bench${QUICK ? ' (quick: not figures to quote)' : ''}\n`);
  console.log(table(outcomes));
  const all = outcomes.flatMap((o) => o.results);
  const missed = all.filter((r) => meetsGoal(r.goal, figureOf(r)) === false).length;
  console.log(
    `\n${all.length} results, ${missed} below their goal; load average ${load.before.toFixed(1)} before, ${load.after.toFixed(1)} after.`,
  );
  const failed = outcomes.filter((o) => o.failure);
  if (failed.length > 0) {
    console.error(`Failed: ${failed.map((o) => o.bench.name).join(', ')}`);
    process.exitCode = 1;
  }
}

await main();
