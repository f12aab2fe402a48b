/**
 * Throughput benchmark: the authenticated, rate-limited, database-backed reads an agent polls (SQLite),
 * each against a bare Fastify route, in one run. See bench/README.md.
 *
 * The reads, all with the account's live key: `GET /v1/account`, `GET /v1/intakes` (a full first page),
 * `GET /v1/intakes/:id` and `GET /v1/intakes/:id/status` (one intake with four items). Each is measured
 * polled (If-None-Match with the answer's ETag: 304 from the kept answer), elsewhere (polled, every read
 * as if after a commit that changed nothing of this account: another account's writes, this one's jobs),
 * cold (every read as if after a commit: the whole answer, built anew) and, if asked for, kept (the whole
 * answer from memory, for a client that sends no If-None-Match). The service logs at `info`, its
 * default, to a file.
 *
 * Environment: BENCH_READS (a comma-separated subset of account, list, intake, status; default all four),
 * BENCH_PASSES (a subset of polled, kept, elsewhere, cold; default polled,elsewhere,cold), BENCH_SECONDS
 * (measured seconds per route and round, default 10), BENCH_WARMUP_SECONDS (default 2), BENCH_CONNECTIONS
 * (default 10), BENCH_ROUNDS (alternating rounds, default 3; the three shorter with BENCH_QUICK=1, see
 * bench/load.ts), BENCH_LOG_LEVEL (the service's, default info).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { destination } from 'pino';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer, type RunningServer } from '../src/server.js';
import { withEveryReadAfterACommit } from './cold.js';
import { printGoalLines, ratioGoal, type RatioGoal } from './goal-lines.js';
import { INTAKE_BODY } from './intake-body.js';
import {
  CONNECTIONS,
  MEASURE_SECONDS,
  ROUNDS,
  WARMUP_SECONDS,
  call,
  measurePair,
  startBare,
  stringField,
  toError,
  type PairResult,
  type RouteResult,
  type Target,
} from './load.js';

/** The service's limit for the benchmark key: high enough that the limiter runs on every request but never rejects. */
const RATE_LIMIT_PER_HOUR = 100_000_000;
/** The target: each polled read keeps at least this share of the bare route's throughput. */
const TARGET_RATIO = 0.5;
/** The target for a cold read (every read as if after a commit). */
const COLD_TARGET_RATIO = 0.3;
/** The service's log level: its default, as a production server runs. */
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info';

/** How each read is measured (BENCH_PASSES picks them; always in this order). */
const PASSES = ['polled', 'kept', 'elsewhere', 'cold'] as const;
type Pass = (typeof PASSES)[number];

function passesFromEnv(): Pass[] {
  const raw = process.env.BENCH_PASSES?.trim();
  if (!raw) return ['polled', 'elsewhere', 'cold'];
  const names = raw.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !PASSES.some((pass) => pass === name));
  if (unknown.length > 0)
    throw new Error(
      `BENCH_PASSES: unknown pass ${unknown.join(', ')}; give a subset of ${PASSES.join(', ')}`,
    );
  return PASSES.filter((pass) => names.includes(pass));
}

/** The reads an agent polls, in the order they are measured (BENCH_READS names them). */
const READS = ['account', 'list', 'intake', 'status'] as const;
type Read = (typeof READS)[number];

/** The list's first page (its default limit) and the drafts created so that it is full. */
const LIST_PAGE_SIZE = 20;
const LIST_DRAFTS = 25;

function isRead(name: string): name is Read {
  return READS.some((read) => read === name);
}

/** BENCH_READS: the reads to measure, in READS order; all of them when unset or empty. */
function readsFromEnv(): Read[] {
  const raw = process.env.BENCH_READS?.trim();
  if (!raw) return [...READS];
  const names = raw.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !isRead(name));
  if (unknown.length > 0) {
    throw new Error(
      `BENCH_READS: unknown read ${unknown.map((name) => `"${name}"`).join(', ')}; ` +
        `give a comma-separated subset of ${READS.join(', ')}`,
    );
  }
  return READS.filter((read) => names.includes(read));
}

/**
 * Creates the intakes the reads find, through the API: LIST_DRAFTS drafts (`send: false`), so the list's
 * first page is full, then the intake that is read alone, sent as the intakes agents poll are. Returns
 * the sent intake's id.
 */
async function createIntakes(serviceUrl: string, key: string): Promise<string> {
  const creation = (body: object): Target => ({
    route: 'POST /v1/intakes',
    url: `${serviceUrl}/v1/intakes`,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  for (let i = 0; i < LIST_DRAFTS; i++) await call(creation({ ...INTAKE_BODY, send: false }), 201);
  return stringField(await call(creation(INTAKE_BODY), 201), 'intake_id');
}

function readTargets(serviceUrl: string, key: string, intakeId: string): Record<Read, Target> {
  const target = (route: string, path: string): Target => ({
    route,
    url: `${serviceUrl}${path}`,
    headers: { authorization: `Bearer ${key}` },
  });
  const items = INTAKE_BODY.items.length;
  return {
    account: target('GET /v1/account', '/v1/account'),
    list: target(`GET /v1/intakes (first page: ${LIST_PAGE_SIZE} of ${LIST_DRAFTS + 1})`, '/v1/intakes'),
    intake: target(`GET /v1/intakes/:id (${items} items)`, `/v1/intakes/${intakeId}`),
    status: target(`GET /v1/intakes/:id/status (${items} items)`, `/v1/intakes/${intakeId}/status`),
  };
}

/** One request to each read before measuring: each answers 200, and the list's first page is full. */
async function checkReads(reads: readonly Read[], targets: Record<Read, Target>): Promise<void> {
  for (const read of reads) {
    const answer = await call(targets[read], 200);
    if (read !== 'list') continue;
    const rows =
      typeof answer === 'object' && answer !== null && 'intakes' in answer && Array.isArray(answer.intakes)
        ? answer.intakes.length
        : 0;
    if (rows !== LIST_PAGE_SIZE) {
      throw new Error(`${targets.list.route}: expected ${LIST_PAGE_SIZE} rows, got ${rows}`);
    }
  }
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

/** One read against the bare route, in each pass asked for. */
interface ReadResult {
  read: Read;
  route: string;
  passes: Partial<Record<Pass, PairResult>>;
}

/** The read's current ETag, which a polling agent sends back in If-None-Match. */
async function etagOf(target: Target): Promise<string> {
  const response = await fetch(target.url, { headers: target.headers });
  await response.arrayBuffer();
  const etag = response.headers.get('etag');
  if (response.status !== 200 || !etag) throw new Error(`${target.route}: expected 200 with an ETag`);
  return etag;
}

async function measureRead(
  service: RunningServer,
  bare: Target,
  read: Read,
  target: Target,
  passes: readonly Pass[],
): Promise<ReadResult> {
  const result: ReadResult = { read, route: target.route, passes: {} };
  for (const pass of passes) {
    process.stderr.write(`\n${target.route}, ${pass}, against ${bare.route}\n`);
    if (pass === 'polled' || pass === 'elsewhere') {
      // Fetching the tag keeps the answer, under the account's version of now.
      const conditional: Target = {
        ...target,
        headers: { ...target.headers, 'if-none-match': await etagOf(target) },
        status: 304,
      };
      result.passes[pass] =
        pass === 'polled'
          ? await measurePair(bare, conditional)
          : await withEveryReadAfterACommit(service, () => measurePair(bare, conditional), false);
    } else if (pass === 'kept') {
      result.passes.kept = await measurePair(bare, target);
    } else {
      result.passes.cold = await withEveryReadAfterACommit(service, () => measurePair(bare, target));
    }
  }
  return result;
}

/** Requests of the read the service answered, warmups included (each went through the rate limiter). */
function answeredBy(result: ReadResult): number {
  const answered = (run: RouteResult) => run.warmupRequests + run.totalRequests;
  return Object.values(result.passes).reduce((sum, pair) => sum + answered(pair.target), 0);
}

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function roundRatios(pair: PairResult): string {
  return pair.roundRatios.map((r) => fixed(r, 3)).join(', ');
}

function medianRatio(pair: PairResult): string {
  return `**${fixed(pair.ratio, 3)}** (${fixed(pair.ratio * 100, 1)}%)`;
}

function goalOf(pass: Pass): number {
  return pass === 'cold' ? COLD_TARGET_RATIO : TARGET_RATIO;
}

function passMet(pass: Pass, pair: PairResult): boolean {
  return pair.ratio >= goalOf(pass);
}

function targetMet(result: ReadResult): boolean {
  return Object.entries(result.passes).every(([pass, pair]) => passMet(pass as Pass, pair));
}

const PASS_NAMES: Record<Pass, string> = {
  polled: 'polled (If-None-Match: 304)',
  kept: 'kept (200 from memory)',
  elsewhere: "polled, every read after another account's commit",
  cold: 'cold (every read after a commit)',
};

function markdownTables(results: readonly ReadResult[]): string {
  const row = (pass: string, r: RouteResult) =>
    `| ${pass} | ${r.route} | ${fixed(r.requestsPerSecondMean, 0)} | ${fixed(r.latencyMeanMs, 2)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} | ${r.totalRequests} |`;
  const missed = results.filter((result) => !targetMet(result)).map((result) => result.read);
  const pairs = (result: ReadResult) => Object.entries(result.passes) as [Pass, PairResult][];
  return [
    '| Pass | Route | Requests/s (mean) | Latency mean (ms) | p50 (ms) | p99 (ms) | Requests measured |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.flatMap((result) =>
      pairs(result).flatMap(([pass, pair]) => [
        row(`${result.read}, ${pass}`, pair.baseline),
        row(`${result.read}, ${pass}`, pair.target),
      ]),
    ),
    '',
    `Ratios read ÷ bare, per alternating round and their median; targets: polled, kept and elsewhere ≥ ${fixed(TARGET_RATIO, 2)}, cold ≥ ${fixed(COLD_TARGET_RATIO, 2)}.`,
    '',
    '| Read | Pass | Rounds | Median | Target |',
    '| --- | --- | --- | ---: | --- |',
    ...results.flatMap((result) =>
      pairs(result).map(
        ([pass, pair]) =>
          `| ${result.route} | ${PASS_NAMES[pass]} | ${roundRatios(pair)} | ${medianRatio(pair)} | ≥ ${fixed(goalOf(pass), 2)}: ${passMet(pass, pair) ? 'met' : 'NOT met'} |`,
      ),
    ),
    '',
    missed.length === 0 ? 'Every read met its targets.' : `Targets NOT met by: ${missed.join(', ')}.`,
  ].join('\n');
}

function goalLines(results: readonly ReadResult[]): RatioGoal[] {
  return results.flatMap((result) =>
    (Object.entries(result.passes) as [Pass, PairResult][]).map(([pass, pair]) =>
      ratioGoal(`reads.${result.read}.${pass}`, `>=${goalOf(pass)}`, 'bare Fastify GET', pair),
    ),
  );
}

async function main(): Promise<void> {
  const reads = readsFromEnv();
  const passes = passesFromEnv();
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
    // The service's log lines go to a file, as a production server's go to its log collector.
    const logStream = destination({ dest: join(dataDir, 'service.log'), sync: false });
    service = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL }), { logStream });
    const account = await createAccount(
      service.services.db.kysely,
      { email: 'bench@example.com', plan: 'agency', rateLimitPerHour: RATE_LIMIT_PER_HOUR },
      new Date().toISOString(),
    );

    const bareTarget: Target = { route: 'GET /bare (bare Fastify)', url: `${bare.url}/bare`, headers: {} };
    const intakeId = await createIntakes(service.url, account.live_key);
    const targets = readTargets(service.url, account.live_key, intakeId);
    await checkReads(reads, targets);
    const usedBefore = await rateLimitUsed(targets.account);

    process.stderr.write(
      `Node ${process.version}, ${availableParallelism()} cores, load average ${fixed(os.loadavg()[0] ?? 0, 2)}; ` +
        `reads ${reads.join(', ')}; passes ${passes.join(', ')}; service log level ${LOG_LEVEL}; ${CONNECTIONS} connections, ` +
        `${ROUNDS} alternating rounds of warmup ${WARMUP_SECONDS} s + measured ${MEASURE_SECONDS} s per route\n`,
    );
    const loadBefore = os.loadavg()[0] ?? 0;
    const results: ReadResult[] = [];
    for (const read of reads) {
      results.push(await measureRead(service, bareTarget, read, targets[read], passes));
    }
    const loadAfter = os.loadavg()[0] ?? 0;
    // The limiter must have counted every answered request of every read and this check's own (it may
    // also count some cut off at the end of a run).
    const counted = (await rateLimitUsed(targets.account)) - usedBefore;
    // The ETag fetch before each polled pass is one request more.
    const etagFetches =
      passes.filter((pass) => pass === 'polled' || pass === 'elsewhere').length * results.length;
    const answered = results.reduce((sum, result) => sum + answeredBy(result), 0) + 1 + etagFetches;
    if (counted < answered) {
      throw new Error(`The rate limiter counted ${counted} requests but ${answered} were answered`);
    }

    process.stdout.write(`\n${markdownTables(results)}\n\n`);
    const summary = {
      node: process.version,
      cores: availableParallelism(),
      loadAverage1m: { before: loadBefore, after: loadAfter },
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      measuredSeconds: MEASURE_SECONDS,
      rounds: ROUNDS,
      logLevel: LOG_LEVEL,
      target: { polled: TARGET_RATIO, kept: TARGET_RATIO, cold: COLD_TARGET_RATIO },
      reads: results.map((result) => ({
        name: result.read,
        route: result.route,
        passes: Object.fromEntries(
          (Object.entries(result.passes) as [Pass, PairResult][]).map(([pass, pair]) => [
            pass,
            {
              bare: pair.baseline,
              read: pair.target,
              roundRatios: pair.roundRatios,
              ratio: pair.ratio,
              targetMet: passMet(pass, pair),
            },
          ]),
        ),
      })),
      targetMet: results.every(targetMet),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    printGoalLines(goalLines(results));
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
