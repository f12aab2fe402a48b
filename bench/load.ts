/**
 * The autocannon harness the benchmarks share: settings from the environment, one run per target in a
 * worker thread, a warmup before each measured run, and a loud failure on any non-2xx answer; and single
 * requests outside autocannon that fail unless the status is the expected one (`call`).
 */
import { inspect } from 'node:util';
import autocannon from 'autocannon';
import Fastify, { type FastifyInstance } from 'fastify';
import { QUICK } from './result.js';

export function positiveNumberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

// BENCH_QUICK=1: two measured seconds after one of warm-up, one round (figures not worth quoting).
export const MEASURE_SECONDS = positiveNumberFromEnv('BENCH_SECONDS', QUICK ? 2 : 10);
export const WARMUP_SECONDS = positiveNumberFromEnv('BENCH_WARMUP_SECONDS', QUICK ? 1 : 2);
export const CONNECTIONS = Math.round(positiveNumberFromEnv('BENCH_CONNECTIONS', 10));

export interface Target {
  route: string;
  url: string;
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** The one status every answer must have (304 for a conditional poll); any 2xx when unset. */
  status?: number;
}

export interface RouteResult {
  route: string;
  requestsPerSecondMean: number;
  latencyMeanMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Answers in the measured run, 2xx or the target's status (the warmup's are in `warmupRequests`). */
  totalRequests: number;
  warmupRequests: number;
  durationSeconds: number;
}

/** One autocannon run, in its own worker thread so the load generator does not share the servers' loop. */
function fire(target: Target, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const guard = setTimeout(
      () => reject(new Error(`autocannon did not finish ${target.route} within ${seconds + 30} s`)),
      (seconds + 30) * 1000,
    );
    const instance = autocannon(
      {
        url: target.url,
        method: target.method ?? 'GET',
        headers: target.headers,
        ...(target.body === undefined ? {} : { body: target.body }),
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

/** One request outside autocannon; throws unless the status is the expected one. */
export async function call(target: Target, expected: number): Promise<unknown> {
  const response = await fetch(target.url, {
    method: target.method,
    headers: target.headers,
    ...(target.body === undefined ? {} : { body: target.body }),
  });
  const text = await response.text();
  if (response.status !== expected) {
    throw new Error(`${target.route} answered ${response.status} (expected ${expected}): ${text}`);
  }
  // A 304 (a conditional poll) has no body.
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

/** The string `field` of a parsed JSON object; throws if there is none. */
export function stringField(value: unknown, field: string): string {
  const found =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : null;
  if (typeof found !== 'string') throw new Error(`Expected a string ${field} in ${JSON.stringify(value)}`);
  return found;
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(inspect(error));
}

/** Answers with `status`, or 2xx answers when it is unset. */
function answered(result: autocannon.Result, status: number | undefined): number {
  if (status === undefined) return result['2xx'];
  const stats = result.statusCodeStats as Record<string, { count: number } | undefined>;
  return stats[String(status)]?.count ?? 0;
}

/**
 * Fails loudly unless every response was a 2xx (or each had the target's one expected status) and no
 * connection failed or timed out.
 */
export function assertClean(phase: string, route: string, result: autocannon.Result, status?: number): void {
  const problems: string[] = [];
  if (status !== undefined) {
    const total = Object.values(result.statusCodeStats as Record<string, { count: number }>).reduce(
      (sum, stat) => sum + stat.count,
      0,
    );
    if (total !== answered(result, status)) {
      problems.push(
        `answers other than ${status} (status counts: ${JSON.stringify(result.statusCodeStats)})`,
      );
    }
    if (answered(result, status) === 0) problems.push(`no ${status} answers at all`);
  } else if (result.non2xx > 0) {
    problems.push(
      `${result.non2xx} non-2xx responses (status counts: ${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  if (result.errors > 0) problems.push(`${result.errors} errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (status === undefined && result['2xx'] === 0) problems.push('no 2xx responses at all');
  if (problems.length > 0) throw new Error(`${phase} run of ${route} failed: ${problems.join(', ')}`);
}

export async function measure(target: Target): Promise<RouteResult> {
  process.stderr.write(`${target.route}: warmup ${WARMUP_SECONDS} s … `);
  const warmup = await fire(target, WARMUP_SECONDS);
  assertClean('Warmup', target.route, warmup, target.status);
  process.stderr.write(`measuring ${MEASURE_SECONDS} s … `);
  const result = await fire(target, MEASURE_SECONDS);
  assertClean('Measured', target.route, result, target.status);
  process.stderr.write(`${Math.round(result.requests.mean)} req/s\n`);
  return {
    route: target.route,
    requestsPerSecondMean: result.requests.mean,
    latencyMeanMs: result.latency.mean,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    totalRequests: answered(result, target.status),
    warmupRequests: answered(warmup, target.status),
    durationSeconds: result.duration,
  };
}

/** Rounds of a baseline/target pair (BENCH_ROUNDS): the ratio reported is the median of the rounds'. */
export const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_ROUNDS', QUICK ? 1 : 3));

export interface PairResult {
  /** All rounds together: mean of the rounds' requests/s, worst p99, summed request counts. */
  baseline: RouteResult;
  target: RouteResult;
  /** Target ÷ baseline requests/s, one per round, in the order measured. */
  roundRatios: number[];
  /** The median of `roundRatios`. */
  ratio: number;
}

/**
 * A target against its baseline in alternating rounds (baseline first, then target first, and so on),
 * each run with its own warmup. The ratio is the median of the rounds' ratios: on a shared machine the
 * throughput drifts over a run (other load, frequency, a VM's stolen time), and alternating makes the
 * drift move both sides of a ratio alike instead of favouring whichever side ran in the quieter moment.
 */
export async function measurePair(baseline: Target, target: Target, rounds = ROUNDS): Promise<PairResult> {
  const baselineRuns: RouteResult[] = [];
  const targetRuns: RouteResult[] = [];
  const roundRatios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`Round ${round + 1} of ${rounds}\n`);
    const baselineFirst = round % 2 === 0;
    const first = await measure(baselineFirst ? baseline : target);
    const second = await measure(baselineFirst ? target : baseline);
    const [baselineRun, targetRun] = baselineFirst ? [first, second] : [second, first];
    baselineRuns.push(baselineRun);
    targetRuns.push(targetRun);
    roundRatios.push(targetRun.requestsPerSecondMean / baselineRun.requestsPerSecondMean);
  }
  return {
    baseline: combine(baselineRuns),
    target: combine(targetRuns),
    roundRatios,
    ratio: median(roundRatios),
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function combine(runs: readonly RouteResult[]): RouteResult {
  const mean = (pick: (r: RouteResult) => number) => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
  const sum = (pick: (r: RouteResult) => number) => runs.reduce((total, r) => total + pick(r), 0);
  return {
    route: runs[0]?.route ?? '',
    requestsPerSecondMean: mean((r) => r.requestsPerSecondMean),
    latencyMeanMs: mean((r) => r.latencyMeanMs),
    latencyP50Ms: median(runs.map((r) => r.latencyP50Ms)),
    latencyP99Ms: Math.max(...runs.map((r) => r.latencyP99Ms)),
    totalRequests: sum((r) => r.totalRequests),
    warmupRequests: sum((r) => r.warmupRequests),
    durationSeconds: sum((r) => r.durationSeconds),
  };
}

/** The reads' baseline: a bare Fastify route answering a small JSON object, on loopback (GET `${url}/bare`). */
export async function startBare(): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ logger: false });
  app.get('/bare', () => ({ ok: true, service: 'bench' }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url };
}
