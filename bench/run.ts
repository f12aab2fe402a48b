/**
 * Throughput benchmark: the authenticated, rate-limited, database-backed `GET /v1/account` (SQLite)
 * against a bare Fastify route, in one run. See bench/README.md.
 *
 * Environment: BENCH_SECONDS (measured seconds per route and round, default 10), BENCH_WARMUP_SECONDS
 * (default 2), BENCH_CONNECTIONS (default 10), BENCH_ROUNDS (alternating rounds, default 3).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer, type RunningServer } from '../src/server.js';
import { withEveryReadAfterACommit } from './cold.js';
import {
  CONNECTIONS,
  MEASURE_SECONDS,
  ROUNDS,
  WARMUP_SECONDS,
  measurePair,
  toError,
  type PairResult,
  type RouteResult,
  type Target,
} from './load.js';

/** The service's limit for the benchmark key: high enough that the limiter runs on every request but never rejects. */
const RATE_LIMIT_PER_HOUR = 100_000_000;
/** The target: the authenticated read keeps at least this share of the bare route's throughput. */
const TARGET_RATIO = 0.5;

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

function markdownTable(
  results: RouteResult[],
  ratio: number,
  roundRatios: number[],
  cold: PairResult,
): string {
  const lines = [
    '| Route | Requests/s (mean) | Latency mean (ms) | p50 (ms) | p99 (ms) | Requests measured |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.route} | ${fixed(r.requestsPerSecondMean, 0)} | ${fixed(r.latencyMeanMs, 2)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} | ${r.totalRequests} |`,
    ),
    '',
    `Ratio authenticated/bare, median of ${roundRatios.length} alternating rounds (${roundRatios.map((r) => fixed(r, 3)).join(', ')}): **${fixed(ratio, 3)}** (${fixed(ratio * 100, 1)}%); target ≥ ${fixed(TARGET_RATIO * 100, 0)}%: ${ratio >= TARGET_RATIO ? 'met' : 'NOT met'}.`,
    `Cold (every read as if after a commit: key and answer from SQLite), median of ${cold.roundRatios.length} rounds (${cold.roundRatios.map((r) => fixed(r, 3)).join(', ')}): **${fixed(cold.ratio, 3)}** (${fixed(cold.ratio * 100, 1)}%); no target.`,
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
        `${ROUNDS} alternating rounds of warmup ${WARMUP_SECONDS} s + measured ${MEASURE_SECONDS} s per route\n`,
    );
    const loadBefore = os.loadavg()[0] ?? 0;
    const pair = await measurePair(bareTarget, accountTarget);
    const bareResult = pair.baseline;
    const accountResult = pair.target;
    const coldPair = await withEveryReadAfterACommit(service, () =>
      measurePair(bareTarget, {
        ...accountTarget,
        route: 'GET /v1/account, every read after a commit (cold)',
      }),
    );
    const loadAfter = os.loadavg()[0] ?? 0;
    const results = [bareResult, accountResult, coldPair.baseline, coldPair.target];
    // The limiter must have counted every answered request (it may also count some cut off at the end).
    const counted = (await rateLimitUsed(accountTarget)) - usedBefore;
    const answered =
      accountResult.warmupRequests +
      accountResult.totalRequests +
      coldPair.target.warmupRequests +
      coldPair.target.totalRequests +
      1;
    if (counted < answered) {
      throw new Error(`The rate limiter counted ${counted} requests but ${answered} were answered`);
    }
    const ratio = pair.ratio;

    process.stdout.write(`\n${markdownTable(results, ratio, pair.roundRatios, coldPair)}\n\n`);
    const summary = {
      node: process.version,
      cores: availableParallelism(),
      loadAverage1m: { before: loadBefore, after: loadAfter },
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      measuredSeconds: MEASURE_SECONDS,
      rounds: ROUNDS,
      results,
      roundRatios: pair.roundRatios,
      ratio,
      cold: { roundRatios: coldPair.roundRatios, ratio: coldPair.ratio },
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
