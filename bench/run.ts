/**
 * Throughput benchmark: the authenticated, rate-limited, database-backed `GET /v1/account` (SQLite)
 * against a bare Fastify route, in one run. See bench/README.md.
 *
 * Environment: BENCH_SECONDS (measured seconds per route, default 10), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 10).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import autocannon from 'autocannon';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer, type RunningServer } from '../src/server.js';

/** The service's limit for the benchmark key: high enough that the limiter runs on every request but never rejects. */
const RATE_LIMIT_PER_HOUR = 100_000_000;
/** The target: the authenticated read keeps at least this share of the bare route's throughput. */
const TARGET_RATIO = 0.5;

function positiveNumberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const MEASURE_SECONDS = positiveNumberFromEnv('BENCH_SECONDS', 10);
const WARMUP_SECONDS = positiveNumberFromEnv('BENCH_WARMUP_SECONDS', 2);
const CONNECTIONS = Math.round(positiveNumberFromEnv('BENCH_CONNECTIONS', 10));

interface Target {
  route: string;
  url: string;
  headers: Record<string, string>;
}

interface RouteResult {
  route: string;
  requestsPerSecondMean: number;
  latencyMeanMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** 2xx responses in the measured run (the warmup's are in `warmupRequests`). */
  totalRequests: number;
  warmupRequests: number;
  durationSeconds: number;
}

/**
 * One autocannon run. The load generator runs in its own worker thread (`workers: 1`) so it does not
 * share the servers' event loop; the servers keep the main thread.
 */
function fire(target: Target, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const guard = setTimeout(
      () => reject(new Error(`autocannon did not finish ${target.route} within ${seconds + 30} s`)),
      (seconds + 30) * 1000,
    );
    const instance = autocannon(
      {
        url: target.url,
        method: 'GET',
        headers: target.headers,
        connections: CONNECTIONS,
        duration: seconds,
        workers: 1,
      },
      (error: unknown, result: autocannon.Result) => {
        clearTimeout(guard);
        if (error) reject(toError(error));
        else resolve(result);
      },
    );
    instance.on('error', (error: unknown) => {
      clearTimeout(guard);
      reject(toError(error));
    });
  });
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(inspect(error));
}

/** Fails loudly unless every response was a 2xx and no connection failed or timed out. */
function assertClean(phase: string, route: string, result: autocannon.Result): void {
  const problems: string[] = [];
  if (result.non2xx > 0) {
    problems.push(
      `${result.non2xx} non-2xx responses (status counts: ${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  if (result.errors > 0) problems.push(`${result.errors} errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (result['2xx'] === 0) problems.push('no 2xx responses at all');
  if (problems.length > 0) throw new Error(`${phase} run of ${route} failed: ${problems.join(', ')}`);
}

async function measure(target: Target): Promise<RouteResult> {
  process.stderr.write(`${target.route}: warmup ${WARMUP_SECONDS} s … `);
  const warmup = await fire(target, WARMUP_SECONDS);
  assertClean('Warmup', target.route, warmup);
  process.stderr.write(`measuring ${MEASURE_SECONDS} s … `);
  const result = await fire(target, MEASURE_SECONDS);
  assertClean('Measured', target.route, result);
  process.stderr.write(`${Math.round(result.requests.mean)} req/s\n`);
  return {
    route: target.route,
    requestsPerSecondMean: result.requests.mean,
    latencyMeanMs: result.latency.mean,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    totalRequests: result['2xx'],
    warmupRequests: warmup['2xx'],
    durationSeconds: result.duration,
  };
}

async function startBare(): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ logger: false });
  app.get('/bare', () => ({ ok: true, service: 'bench' }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url };
}

/**
 * One authenticated request: checks that the key works and the limiter is on the path with the raised
 * limit, and returns how many requests the limiter has counted for the key (this one included).
 */
async function rateLimitUsed(target: Target): Promise<number> {
  const response = await fetch(target.url, { headers: target.headers });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${target.route} answered ${response.status}: ${body}`);
  const limit = response.headers.get('x-ratelimit-limit');
  const remaining = Number(response.headers.get('x-ratelimit-remaining'));
  if (limit !== String(RATE_LIMIT_PER_HOUR) || !Number.isInteger(remaining)) {
    throw new Error(
      `Expected X-RateLimit-Limit ${RATE_LIMIT_PER_HOUR} and a numeric X-RateLimit-Remaining, got ${limit ?? 'none'} and ${remaining}`,
    );
  }
  return RATE_LIMIT_PER_HOUR - remaining;
}

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function markdownTable(results: RouteResult[], ratio: number): string {
  const lines = [
    '| Route | Requests/s (mean) | Latency mean (ms) | p50 (ms) | p99 (ms) | Requests measured |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.route} | ${fixed(r.requestsPerSecondMean, 0)} | ${fixed(r.latencyMeanMs, 2)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} | ${r.totalRequests} |`,
    ),
    '',
    `Ratio authenticated/bare: **${fixed(ratio, 3)}** (${fixed(ratio * 100, 1)}%); target ≥ ${fixed(TARGET_RATIO * 100, 0)}%: ${ratio >= TARGET_RATIO ? 'met' : 'NOT met'}.`,
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-'));
  let bare: { app: FastifyInstance; url: string } | undefined;
  let service: RunningServer | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: cleaning up\n`);
    void cleanup().finally(() => process.exit(130));
  };
  let cleaned: Promise<void> | undefined;
  const cleanup = (): Promise<void> => {
    cleaned ??= (async () => {
      await bare?.app.close();
      await service?.stop();
      await rm(dataDir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    bare = await startBare();
    service = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn' }));
    const account = await createAccount(
      service.services.db.kysely,
      { email: 'bench@example.com', plan: 'agency', rateLimitPerHour: RATE_LIMIT_PER_HOUR },
      new Date().toISOString(),
    );

    const bareTarget: Target = { route: 'GET /bare (bare Fastify)', url: `${bare.url}/bare`, headers: {} };
    const accountTarget: Target = {
      route: 'GET /v1/account (auth + rate limit + SQLite)',
      url: `${service.url}/v1/account`,
      headers: { authorization: `Bearer ${account.live_key}` },
    };
    const usedBefore = await rateLimitUsed(accountTarget);

    process.stderr.write(
      `Node ${process.version}, ${availableParallelism()} cores, load average ${fixed(os.loadavg()[0] ?? 0, 2)}; ` +
        `${CONNECTIONS} connections, ` +
        `warmup ${WARMUP_SECONDS} s + measured ${MEASURE_SECONDS} s per route\n`,
    );
    const loadBefore = os.loadavg()[0] ?? 0;
    const bareResult = await measure(bareTarget);
    const accountResult = await measure(accountTarget);
    const loadAfter = os.loadavg()[0] ?? 0;
    const results = [bareResult, accountResult];
    // The limiter must have counted every answered request (it may also count some cut off at the end).
    const counted = (await rateLimitUsed(accountTarget)) - usedBefore;
    const answered = accountResult.warmupRequests + accountResult.totalRequests + 1;
    if (counted < answered) {
      throw new Error(`The rate limiter counted ${counted} requests but ${answered} were answered`);
    }
    const ratio = accountResult.requestsPerSecondMean / bareResult.requestsPerSecondMean;

    process.stdout.write(`\n${markdownTable(results, ratio)}\n\n`);
    const summary = {
      node: process.version,
      cores: availableParallelism(),
      loadAverage1m: { before: loadBefore, after: loadAfter },
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      measuredSeconds: MEASURE_SECONDS,
      results,
      ratio,
      target: TARGET_RATIO,
      targetMet: ratio >= TARGET_RATIO,
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`\nBenchmark failed: ${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
