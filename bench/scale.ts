/**
 * Scale-out benchmark (bench/README.md, "Scale-out"): requests/s and p99 of create intake (with the test
 * key, and with the live key, which counts the plan's month), get status and portal save against one
 * `api` process and against three, on SQLite (the embedded default, one
 * database file shared by the processes) and on PostgreSQL (with Redis for the shared rate limit),
 * all started through the CLI as an operator would. The one-process figure of each database is the
 * baseline of its three-process figure, measured in the same run.
 *
 * Load: one autocannon run per API process at once (BENCH_CONNECTIONS each, default 10), summed;
 * p99 is the worst of the processes' p99s. The API processes' CPU time during each measured run is
 * read from /proc (Linux) and reported per 1,000 requests in the JSON.
 *
 * Environment: BENCH_SCALE_SECONDS (measured seconds per route, default 5), BENCH_SCALE_WARMUP_SECONDS
 * (default 1), BENCH_CONNECTIONS, TEST_POSTGRES_URL, TEST_REDIS_URL, BENCH_SCALE_DATABASES
 * (comma-separated, default `sqlite,postgres`; PostgreSQL is skipped when unreachable unless named
 * here), BENCH_SCALE_CPU_QUOTA (below).
 *
 * CPU-quota mode (BENCH_SCALE_CPU_QUOTA, a fraction of one CPU such as 0.3): each API process is put
 * into a cgroup of its own with that CPU quota right after it is spawned, so that three processes get
 * three times the CPU of one, as with one process per core. On a machine where one unlimited process
 * already saturates every core (the database, Redis and the load generators share them), this is the
 * only way to see the service's own scaling; the output labels the figures as quota-limited. It needs
 * root and a writable cgroup v2 `cpu.max` or cgroup v1 cpu hierarchy, and fails when neither works.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/db/database.js';
import { cpuMeter, cpuQuotaFromEnv, quotaNotice, type CpuQuota } from './cpu.js';
import { SMALL_INTAKE_BODY } from './intake-body.js';
import { assertClean, positiveNumberFromEnv, toError } from './load.js';
import { TSX, cleanUpOnSignals, cleanupOnce, startAll, startRole, postgresReachable } from './processes.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** A Redis database of the bench's own (15), flushed between scenarios: the tests' counters stay untouched. */
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
/**
 * Portal writes are limited per intake (1,200 an hour) and per IP address (3,000 an hour, and every
 * request here comes from 127.0.0.1): the save route runs a fixed number of requests under both.
 */
const PORTAL_SAVES = 2_700;
const SECONDS = positiveNumberFromEnv('BENCH_SCALE_SECONDS', 5);
const WARMUP = positiveNumberFromEnv('BENCH_SCALE_WARMUP_SECONDS', 1);
const CONNECTIONS = Math.round(positiveNumberFromEnv('BENCH_CONNECTIONS', 10));

type Dialect = 'sqlite' | 'postgres';
const ALL_DIALECTS: Dialect[] = ['sqlite', 'postgres'];

interface Proc {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

function isDialect(name: string): name is Dialect {
  return name === 'sqlite' || name === 'postgres';
}

/**
 * BENCH_SCALE_DATABASES, and whether it was set: PostgreSQL named explicitly must be reachable, while
 * by default an unreachable one is skipped (as before the variable existed).
 */
function databasesFromEnv(): { dialects: Dialect[]; explicit: boolean } {
  const raw = process.env.BENCH_SCALE_DATABASES;
  if (raw === undefined || raw.trim() === '') return { dialects: ALL_DIALECTS, explicit: false };
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !isDialect(name));
  if (unknown.length > 0 || names.length === 0)
    throw new Error(`BENCH_SCALE_DATABASES must list sqlite and/or postgres, got "${raw}"`);
  return { dialects: ALL_DIALECTS.filter((d) => names.includes(d)), explicit: true };
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...TSX, 'src/cli.ts', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`cli ${args[0]}: ${err}`))));
  });
}

/** One `api` process, ready once it listens (and, with a quota, is in its cgroup): bench/processes.ts. */
async function startApi(env: NodeJS.ProcessEnv, quota: CpuQuota | undefined): Promise<Proc> {
  const {
    ready: url,
    pid,
    stop,
  } = await startRole('api', env, quota, (out) => {
    const match = /listening on (http:\/\/\S+)/.exec(out);
    return match?.[1] && out.includes('Background worker:') ? match[1] : undefined;
  });
  return { url, pid, stop };
}

interface Route {
  name: string;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: string;
  headers: Record<string, string>;
  /** A fixed number of requests instead of a duration (the portal's limits). */
  amount?: number;
}

function fire(url: string, route: Route, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: url + route.path,
        method: route.method,
        headers: route.headers,
        ...(route.body === undefined ? {} : { body: route.body }),
        connections: CONNECTIONS,
        ...(route.amount === undefined ? { duration: seconds } : { amount: route.amount }),
        workers: 1,
      },
      (error: unknown, result: autocannon.Result) => (error ? reject(toError(error)) : resolve(result)),
    );
  });
}

interface Measured {
  route: string;
  requestsPerSecond: number;
  p99Ms: number;
  /** CPU seconds of all the API processes together per 1,000 2xx answers of the measured run (null without /proc). */
  apiCpuSecondsPer1000Requests: number | null;
  /** CPUs each API process used on average during the measured run (at most the quota, if any). */
  apiCpuPerProcess: number | null;
}

/** One autocannon per process, at once (each process its own route: its own intake); throughput summed, p99 the worst. */
async function measure(apis: Proc[], routeFor: (i: number) => Route): Promise<Measured> {
  const urls = apis.map((api) => api.url);
  const pids = apis.map((api) => api.pid);
  const routes = urls.map((_, i) => routeFor(i));
  const name = routeFor(0).name;
  process.stderr.write(`  ${name} on ${urls.length} process(es): warmup … `);
  const warmups = routes.map((r) => (r.amount === undefined ? r : { ...r, amount: 30 }));
  for (const [i, r] of (
    await Promise.all(warmups.map((route, i) => fire(urls[i] ?? '', route, WARMUP)))
  ).entries())
    assertClean('Warmup', `${name}#${i}`, r);
  process.stderr.write('measuring … ');
  const cpuSince = await cpuMeter(pids);
  const startedAt = performance.now();
  const measured = await Promise.all(routes.map((route, i) => fire(urls[i] ?? '', route, SECONDS)));
  const wallSeconds = (performance.now() - startedAt) / 1000;
  const answered = measured.reduce((sum, r) => sum + r['2xx'], 0);
  const cpu = await cpuSince(answered, wallSeconds);
  for (const [i, r] of measured.entries()) assertClean('Measured', `${name}#${i}`, r);
  const requestsPerSecond = measured.reduce((sum, r) => sum + r['2xx'] / r.duration, 0);
  const p99Ms = Math.max(...measured.map((r) => r.latency.p99));
  const apiCpuSecondsPer1000Requests = cpu.secondsPer1000;
  const apiCpuPerProcess = cpu.perProcess;
  process.stderr.write(
    `${Math.round(requestsPerSecond)} req/s, p99 ${p99Ms} ms` +
      (apiCpuPerProcess === null ? '' : `, ${apiCpuPerProcess.toFixed(2)} CPU per API process`) +
      '\n',
  );
  return { route: name, requestsPerSecond, p99Ms, apiCpuSecondsPer1000Requests, apiCpuPerProcess };
}

async function scenario(
  dialect: Dialect,
  processes: number,
  quota: CpuQuota | undefined,
): Promise<Measured[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-scale-'));
  const schema = `bench_s_${process.pid}_${Date.now().toString(36)}`;
  const dbUrl = new URL(POSTGRES_URL);
  dbUrl.searchParams.set('schema', schema);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    PORT: '0',
    SECRET_KEY: 'bench-'.repeat(8),
    ...(dialect === 'postgres' ? { DATABASE_URL: dbUrl.toString(), REDIS_URL } : {}),
  };
  delete env.BASE_URL;
  const started: Proc[] = [];
  // Run once, by the `finally` below or by the signal handler, whichever comes first.
  const cleanup = cleanupOnce(async () => {
    await Promise.all(started.map((p) => p.stop()));
    if (dialect === 'postgres') {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
    await rm(dataDir, { recursive: true, force: true });
  });
  if (dialect === 'postgres') {
    const redis = new Redis(REDIS_URL);
    await redis.flushdb();
    redis.disconnect();
  }
  try {
    await cli(['migrate'], env);
    const account = JSON.parse(
      await cli(
        [
          'accounts',
          'create',
          '--email',
          `${randomUUID()}@example.com`,
          '--plan',
          'agency',
          '--rate-limit',
          '1000000000',
          '--json',
        ],
        env,
      ),
    ) as { account_id: string; test_key: string; live_key: string };
    await startAll(processes, () => startApi(env, quota), started);
    const urls = started.map((p) => p.url);
    // A test-mode key: test intakes do not count against the plan's monthly quota (a live key's 402s).
    const auth = { authorization: `Bearer ${account.test_key}`, 'content-type': 'application/json' };
    const intakeBody = JSON.stringify(SMALL_INTAKE_BODY);
    // One intake per process for the reads and the saves (saves to one item serialise on its row).
    const ids: string[] = [];
    for (const url of urls) {
      const response = await fetch(`${url}/v1/intakes`, { method: 'POST', headers: auth, body: intakeBody });
      if (response.status !== 201)
        throw new Error(`create answered ${response.status}: ${await response.text()}`);
      ids.push(((await response.json()) as { intake_id: string }).intake_id);
    }
    // Live creations count against the plan's month (1,000 on this plan): one creates the month's
    // counter, which is then lowered far enough that no creation of the run is refused.
    const liveAuth = { ...auth, authorization: `Bearer ${account.live_key}` };
    const live = await fetch(`${urls[0]}/v1/intakes`, {
      method: 'POST',
      headers: liveAuth,
      body: intakeBody,
    });
    if (live.status !== 201) throw new Error(`live create answered ${live.status}: ${await live.text()}`);
    const opened = openDatabase({ databaseUrl: env.DATABASE_URL, dataDir });
    try {
      await sql`update usage_counters set value = value - 1000000000
        where account_id = ${account.account_id} and livemode = 1 and metric = 'intakes'`.execute(
        opened.kysely,
      );
    } finally {
      await opened.close();
    }
    const results: Measured[] = [];
    results.push(
      await measure(started, (i) => ({
        name: 'GET /v1/intakes/:id/status',
        method: 'GET',
        path: `/v1/intakes/${ids[i]}/status`,
        headers: auth,
      })),
    );
    results.push(
      await measure(started, (i) => ({
        name: 'PUT /portal/api/:id/items/:key (save)',
        method: 'PUT',
        path: `/portal/api/${ids[i]}/items/about`,
        body: JSON.stringify({ value: 'We build boats since 1999.' }),
        headers: { 'content-type': 'application/json' },
        amount: Math.min(1_150, Math.floor((PORTAL_SAVES - 30 * urls.length) / urls.length)),
      })),
    );
    results.push(
      await measure(started, () => ({
        name: 'POST /v1/intakes (create)',
        method: 'POST',
        path: '/v1/intakes',
        body: intakeBody,
        headers: auth,
      })),
    );
    // Live: each creation also updates the account's one counter of the month.
    results.push(
      await measure(started, () => ({
        name: 'POST /v1/intakes (create, live key)',
        method: 'POST',
        path: '/v1/intakes',
        body: intakeBody,
        headers: liveAuth,
      })),
    );
    return results;
  } finally {
    await cleanup();
  }
}

const stopHandlingSignals = cleanUpOnSignals('API');
const quota = await cpuQuotaFromEnv('BENCH_SCALE_CPU_QUOTA', 'bench-scale');
const databases = databasesFromEnv();
let dialects = databases.dialects;
if (dialects.includes('postgres') && !(await postgresReachable(POSTGRES_URL))) {
  if (databases.explicit)
    throw new Error(
      'BENCH_SCALE_DATABASES names postgres, but PostgreSQL (TEST_POSTGRES_URL) is unreachable',
    );
  dialects = dialects.filter((d) => d !== 'postgres');
}
const notice =
  quota === undefined ? undefined : quotaNotice(quota, 'API', 'PostgreSQL, Redis and the load generators');
if (notice !== undefined) process.stderr.write(notice.header);
const table: string[] = [
  `Machine: ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}; ` +
    `${CONNECTIONS} connections per process, ${SECONDS} s measured after ${WARMUP} s warmup.`,
  ...(notice?.tableLines ?? []),
  '',
  '| database | route | 1 process: req/s (p99 ms) | 3 processes: req/s (p99 ms) | 3 ÷ 1 |',
  '|---|---|---|---|---|',
];
const raw: Record<string, Measured[]> = {};
for (const dialect of dialects) {
  process.stderr.write(`${dialect}, 1 process\n`);
  const one = await scenario(dialect, 1, quota);
  process.stderr.write(`${dialect}, 3 processes\n`);
  const three = await scenario(dialect, 3, quota);
  raw[`${dialect}-1`] = one;
  raw[`${dialect}-3`] = three;
  for (const a of one) {
    const b = three.find((m) => m.route === a.route);
    if (!b) continue;
    table.push(
      `| ${dialect} | ${a.route} | ${Math.round(a.requestsPerSecond)} (${a.p99Ms}) | ${Math.round(b.requestsPerSecond)} (${b.p99Ms}) | ${(b.requestsPerSecond / a.requestsPerSecond).toFixed(2)}× |`,
    );
  }
}
stopHandlingSignals();
// The quota keys only in quota mode: without it the JSON keeps its shape of before.
const output =
  quota === undefined
    ? raw
    : { cpuQuotaPerApiProcess: quota.fraction, cgroupVersion: quota.controller.version, ...raw };
console.log(table.join('\n'));
console.log('\n```json\n' + JSON.stringify(output) + '\n```');
