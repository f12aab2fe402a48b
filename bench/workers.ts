/**
 * Worker scale-out benchmark (bench/README.md, "Scale-out"): webhook deliveries and reminders per
 * second drained by one `worker` process and by three (started through the CLI), on PostgreSQL, to a
 * loopback webhook receiver and a loopback SMTP sink. One worker is the baseline of three, in the
 * same run.
 *
 * Each scenario: a fresh schema; BENCH_WORKER_EVENTS events recorded through the outbox (as state
 * changes record them) and BENCH_WORKER_REMINDERS intakes with a due reminder, all held back (due
 * tomorrow) while the workers start; then released with one UPDATE, and timed from the release to
 * the last arrival. Webhooks are drained first, then reminders.
 *
 * The worker processes' CPU time while draining is read from /proc (Linux) and reported per 1,000
 * jobs in the JSON.
 *
 * Environment: BENCH_WORKER_EVENTS (default 2000), BENCH_WORKER_REMINDERS (default 2000),
 * BENCH_WORKER_ROUNDS (default 2: one then three workers, then three then one), BENCH_WORKER_WARM_UP
 * (default 150 jobs of each kind per worker process, drained before the measured ones),
 * TEST_POSTGRES_URL (PostgreSQL is required), BENCH_WORKERS_CPU_QUOTA (below).
 *
 * CPU-quota mode (BENCH_WORKERS_CPU_QUOTA, a fraction of one CPU such as 0.25): each worker process is
 * put into a cgroup of its own with that CPU quota right after it is spawned (before any job is
 * released), so that three processes get three times the CPU of one, as with one process per core;
 * the same mode as bench:scale's BENCH_SCALE_CPU_QUOTA (bench/cpu.ts, bench/processes.ts). On a small
 * machine where one unlimited worker, PostgreSQL and the receivers already share every core, this is
 * the only way to see the workers' own scaling. Needs root and a writable cgroup v2 `cpu.max` or
 * cgroup v1 cpu hierarchy, and fails when neither works.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DISPATCH_CHASE } from '../src/modules/chases/chases.jobs.js';
import { WEBHOOK_ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/webhooks.jobs.js';
import { WEBHOOK_ATTEMPT } from '../src/modules/webhooks/webhooks.jobs.js';
import { startServer, type RunningServer } from '../src/server.js';
import { cpuMeter, cpuQuotaFromEnv, quotaNotice, type CpuQuota } from './cpu.js';
import { positiveNumberFromEnv } from './load.js';
import { cleanUpOnSignals, cleanupOnce, startAll, startRole, type Started } from './processes.js';
import { printRatio, QUICK } from './result.js';
import { seedDueReminders, seedSentEvents } from './seed.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Math.round(positiveNumberFromEnv('BENCH_WORKER_EVENTS', QUICK ? 300 : 2000));
const REMINDERS = Math.round(positiveNumberFromEnv('BENCH_WORKER_REMINDERS', QUICK ? 300 : 2000));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_WORKER_ROUNDS', QUICK ? 1 : 2));
/** Jobs of each kind per worker process drained before the measured ones (0: none). */
const WARM_UP = Math.round(Number(process.env.BENCH_WORKER_WARM_UP ?? (QUICK ? 50 : 150)));
const HELD = 86_400_000;

async function startReceiver() {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function startSink() {
  let received = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('end', () => {
        received++;
        callback();
      });
      stream.resume();
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}?from=bench%40example.test`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One `worker` process, ready once it polls (and, with a quota, is in its cgroup): bench/processes.ts. */
function startWorkerProcess(env: NodeJS.ProcessEnv, quota: CpuQuota | undefined): Promise<Started<true>> {
  return startRole('worker', env, quota, (out) => (out.includes('Intake worker running') ? true : undefined));
}

async function until(what: string, check: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Drained {
  count: number;
  seconds: number;
  perSecond: number;
  /** CPU seconds of all the worker processes together per 1,000 jobs drained (null without /proc). */
  workerCpuSecondsPer1000Jobs: number | null;
  /** CPUs each worker process used on average while draining (at most the quota, if any). */
  workerCpuPerProcess: number | null;
  /** The worker processes' main-thread context switches per job (null without /proc). */
  workerSwitchesPerJob: number | null;
}

/** An account with a webhook endpoint on the receiver, `events` deliveries and `reminders` reminders, all held. */
async function seedHeldWork(
  api: RunningServer,
  receiverUrl: string,
  events: number,
  reminders: number,
): Promise<string> {
  const k = api.services.db.kysely;
  const account = await createAccount(
    k,
    { email: `bench-${Date.now()}@example.test`, name: 'Bench Studio', plan: 'agency' },
    new Date().toISOString(),
  );
  // The endpoint through the API, as a user registers it.
  const registered = await fetch(`${api.url}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.live_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiverUrl, events: ['intake.sent'] }),
  });
  if (registered.status !== 201) throw new Error(`registering the endpoint: ${await registered.text()}`);
  await seedSentEvents(k, account.account_id, events);
  await seedDueReminders(k, account.account_id, reminders, HELD);
  await sql`update jobs set due_at = due_at + ${HELD} where account_id = ${account.account_id}`.execute(k);
  return account.account_id;
}

/**
 * Releases the held jobs of one kind and times them from the release to the last arrival. The
 * workers' CPU is read just around it, so that their start-up and idle polling before do not count.
 */
async function drain(
  k: Kysely<Database>,
  workers: Started<true>[],
  kind: string,
  count: number,
  received: () => number,
  accountId: string,
): Promise<Drained> {
  const before = received();
  const cpuSince = await cpuMeter(workers.map((w) => w.pid));
  const started = performance.now();
  await sql`update jobs set due_at = ${Date.now() - 1000}
    where kind = ${kind} and account_id = ${accountId}`.execute(k);
  await until(`${count} ${kind}`, () => received() - before >= count).catch(async (error: unknown) => {
    const jobs = await sql<{ kind: string; n: number; error: string | null }>`
      select kind, count(*)::int as n, max(last_error) as error from jobs group by kind`.execute(k);
    throw new Error(`${String(error)}; jobs left: ${JSON.stringify(jobs.rows)}`);
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = await cpuSince(count, seconds);
  process.stderr.write(
    `  ${workers.length} worker(s), ${kind}: ${count} in ${seconds.toFixed(2)} s` +
      (cpu.perProcess === null || cpu.secondsPer1000 === null
        ? ''
        : `, ${cpu.perProcess.toFixed(2)} CPU per worker process, ${cpu.secondsPer1000.toFixed(2)} CPU s per 1,000`) +
      (cpu.switchesPerUnit === null ? '' : `, ${cpu.switchesPerUnit.toFixed(1)} wake-ups per job`) +
      '\n',
  );
  return {
    count,
    seconds,
    perSecond: count / seconds,
    workerCpuSecondsPer1000Jobs: cpu.secondsPer1000,
    workerCpuPerProcess: cpu.perProcess,
    workerSwitchesPerJob: cpu.switchesPerUnit,
  };
}

async function scenario(
  workers: number,
  quota: CpuQuota | undefined,
): Promise<{ webhooks: Drained; reminders: Drained }> {
  const schema = `bench_w_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-workers-'));
  const [receiver, sink] = await Promise.all([startReceiver(), startSink()]);
  const secretKey = 'bench-'.repeat(8);
  let api: RunningServer | undefined;
  const running: Started<true>[] = [];
  // Run once, by the `finally` below or by the signal handler, whichever comes first.
  const cleanup = cleanupOnce(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await api?.stop();
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
    await Promise.all([receiver.close(), sink.close()]);
    await rm(dataDir, { recursive: true, force: true });
  });
  try {
    // An API in this process for the setup (it migrates the schema); the work goes to worker processes.
    api = await startServer(
      loadConfig({
        PORT: '0',
        DATA_DIR: dataDir,
        DATABASE_URL: url.toString(),
        SECRET_KEY: secretKey,
        LOG_LEVEL: 'warn',
      }),
      { runWorker: false },
    );
    // A warm-up share for each worker process first (its JIT, the email shapes it compiles once,
    // its pools), drained before the measured work: per-job CPU is a steady-state figure.
    const warmUp = await seedHeldWork(api, receiver.url, WARM_UP * workers, WARM_UP * workers);
    const measured = await seedHeldWork(api, receiver.url, EVENTS, REMINDERS);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url.toString(),
      DATA_DIR: dataDir,
      SMTP_URL: sink.url,
      SECRET_KEY: secretKey,
      LOG_LEVEL: 'error',
    };
    await startAll(workers, () => startWorkerProcess(env, quota), running);

    const k = api.services.db.kysely;
    if (WARM_UP > 0) {
      process.stderr.write('  warm-up:\n');
      await drain(k, running, WEBHOOK_ATTEMPT.kind, WARM_UP * workers, receiver.received, warmUp);
      await drain(k, running, DISPATCH_CHASE.kind, WARM_UP * workers, sink.received, warmUp);
    }
    const webhooks = await drain(k, running, WEBHOOK_ATTEMPT.kind, EVENTS, receiver.received, measured);
    const reminders = await drain(k, running, DISPATCH_CHASE.kind, REMINDERS, sink.received, measured);
    return { webhooks, reminders };
  } finally {
    await cleanup();
  }
}

const stopHandlingSignals = cleanUpOnSignals('worker');
const quota = await cpuQuotaFromEnv('BENCH_WORKERS_CPU_QUOTA', 'bench-workers');
const notice =
  quota === undefined
    ? undefined
    : quotaNotice(
        quota,
        'worker',
        'PostgreSQL, the webhook receiver and the SMTP sink (in the bench process)',
      );
if (notice !== undefined) process.stderr.write(notice.header);
// Alternating rounds: one worker then three, then three then one, and so on.
const ones: { webhooks: Drained; reminders: Drained }[] = [];
const threes: { webhooks: Drained; reminders: Drained }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  if (round % 2 === 0) {
    ones.push(await scenario(1, quota));
    threes.push(await scenario(3, quota));
  } else {
    threes.push(await scenario(3, quota));
    ones.push(await scenario(1, quota));
  }
}
stopHandlingSignals();
const one = ones[ones.length - 1];
const three = threes[threes.length - 1];
if (!one || !three) throw new Error('no round ran');
for (const work of ['webhooks', 'reminders'] as const) {
  const rounds = ones.map((o, i) => {
    const a = o[work].workerCpuSecondsPer1000Jobs;
    const b = threes[i]?.[work].workerCpuSecondsPer1000Jobs;
    if (a === null || b === null || b === undefined) throw new Error('worker CPU needs /proc (Linux)');
    // Jobs per worker CPU-second: three workers against one (1 = the same CPU per job).
    return { service: 1000 / b, baseline: 1000 / a };
  });
  printRatio({
    name: `workers: ${work === 'webhooks' ? 'webhook attempts' : 'reminders'} per worker CPU-second, 3 workers ÷ 1 (PostgreSQL)`,
    goal: '>=0.83',
    baseline: `the same drain by one worker process (jobs per worker CPU-second; within 20% = at least 0.83)`,
    rounds,
  });
}
console.log(
  [
    `Machine: ${os.cpus().length} CPU(s), Node ${process.version}; PostgreSQL; per-endpoint concurrency ${WEBHOOK_ENDPOINT_CONCURRENCY} per process.`,
    ...(notice?.tableLines ?? []),
    '',
    '| work | 1 worker: per second | 3 workers: per second | 3 ÷ 1 |',
    '|---|---|---|---|',
    `| webhook deliveries (${EVENTS}, one endpoint) | ${Math.round(one.webhooks.perSecond)} | ${Math.round(three.webhooks.perSecond)} | ${(three.webhooks.perSecond / one.webhooks.perSecond).toFixed(2)}× |`,
    `| reminders sent (${REMINDERS}, SMTP) | ${Math.round(one.reminders.perSecond)} | ${Math.round(three.reminders.perSecond)} | ${(three.reminders.perSecond / one.reminders.perSecond).toFixed(2)}× |`,
  ].join('\n'),
);
// The quota keys only in quota mode, as in bench:scale.
const output =
  quota === undefined
    ? { one, three }
    : { cpuQuotaPerWorkerProcess: quota.fraction, cgroupVersion: quota.controller.version, one, three };
console.log('\n```json\n' + JSON.stringify(output) + '\n```');
