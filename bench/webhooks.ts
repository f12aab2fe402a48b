/**
 * Webhook delivery benchmark (bench/README.md, "Webhooks"), every request to 127.0.0.1. Two ratios per
 * database, each the median of alternating rounds (the baseline first in odd rounds, second in even):
 *
 * 1. Drain: BENCH_WEBHOOK_EVENTS due deliveries to one endpoint (recorded through the outbox, held,
 *    then made due in one transaction, as a retry wave or `jobs retry` does), from the release to
 *    the last arrival, against a bare POST loop (undici, keep-alive, signed event-sized bodies) with
 *    as many requests in flight as the service may have for one endpoint.
 * 2. Burst: BENCH_WEBHOOK_EVENTS drafts sent through the API (`POST /v1/intakes/:id/send`, 4 at a
 *    time), from the first send to the last `intake.sent` arrival, against the same sends of another
 *    account that has no endpoint plus the bare POST loop, one after the other (sending and
 *    delivering back to back).
 *
 * Before the first round, each side of each part runs once untimed with up to 500 events, so that
 * no round measures V8 compiling one side's code.
 *
 * SQLite: the embedded `serve` (API and worker in this process). PostgreSQL: the API in this process
 * and two `worker` processes (the CLI). Then, for the record, the idle delay from a state change to
 * its arrival (BENCH_WEBHOOK_SAMPLES intakes sent one by one, spaced out), and a burst to a slow
 * receiver (it answers after BENCH_SLOW_RECEIVER_MS, default 20, so that four in flight deliver less
 * than the sends make): its time to the last arrival, and on SQLite the embedded worker's claims.
 *
 * Environment: BENCH_WEBHOOK_EVENTS (default 400; 100 with BENCH_QUICK=1), BENCH_WEBHOOK_ROUNDS
 * (default 3; 1 quick), BENCH_WEBHOOK_SAMPLES (default 30; 5 quick), BENCH_WEBHOOK_DATABASES (default
 * sqlite,postgres; PostgreSQL at TEST_POSTGRES_URL, skipped with a notice when it does not answer),
 * BENCH_WEBHOOK_PARTS (default drain,burst,idle,slow), BENCH_SLOW_RECEIVER_MS (default 20).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import { notifyJobDue } from '../src/jobs/wakeup.js';
import { Worker } from '../src/jobs/worker.js';
import { emitEvent } from '../src/kernel/public-events.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { WEBHOOK_ATTEMPT, WEBHOOK_ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/webhooks.jobs.js';
import { signatureHeader } from '../src/modules/webhooks/signing.js';
import { startServer, type RunningServer } from '../src/server.js';
import { positiveNumberFromEnv } from './load.js';
import {
  cleanUpOnSignals,
  cleanupOnce,
  startAll,
  startRole,
  type Started,
  postgresReachable,
} from './processes.js';
import { median, printRatio, QUICK, type BenchResult } from './result.js';

const EVENTS = Math.round(positiveNumberFromEnv('BENCH_WEBHOOK_EVENTS', QUICK ? 100 : 400));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_WEBHOOK_ROUNDS', QUICK ? 1 : 3));
const SAMPLES = Math.round(positiveNumberFromEnv('BENCH_WEBHOOK_SAMPLES', QUICK ? 5 : 30));
/** Events of each side of each part sent before the first round, not timed. */
const WARM_UP = Math.min(EVENTS, 500);
const DATABASES = (process.env.BENCH_WEBHOOK_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim());
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Which parts run (a subset helps profiling one): drain, burst, idle, slow. */
const PARTS = new Set(
  (process.env.BENCH_WEBHOOK_PARTS ?? 'drain,burst,idle,slow').split(',').map((p) => p.trim()),
);
const SLOW_RECEIVER_MS = positiveNumberFromEnv('BENCH_SLOW_RECEIVER_MS', 20);
const POSTGRES_WORKERS = 2;
const SEND_CONCURRENCY = 4;
const HELD_MS = 86_400_000;

/** A receiver that answers 200, at once or after `answerMs`, and keeps each request's arrival time and body. */
async function startReceiver(answerMs = 0) {
  const arrivals: { at: number; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrivals.push({ at: Date.now(), body: Buffer.concat(chunks).toString('utf8') });
      const answer = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (answerMs > 0) setTimeout(answer, answerMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

async function until(what: string, check: () => boolean, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** `count` tasks, `lanes` at a time. */
async function inLanes(count: number, lanes: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

/** The baseline: `count` signed POSTs of an event-sized body, `inFlight` at a time, keep-alive. Seconds. */
async function bareLoop(receiver: Receiver, count: number, inFlight: number): Promise<number> {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const before = receiver.arrivals.length;
  const started = performance.now();
  await inLanes(count, inFlight, async (i) => {
    const body = JSON.stringify({
      id: `evt_baseline${i}`,
      event: 'intake.sent',
      intake_id: 'in_0000000000000000000000',
      occurred_at: new Date().toISOString(),
      livemode: true,
      project_name: 'Benchmark',
      client_email: 'bench@example.com',
      sent_at: new Date().toISOString(),
    });
    const response = await request(receiver.url, {
      method: 'POST',
      body,
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        'service-signature': signatureHeader(body, ['whsec_baseline_000000000000000000'], Date.now() / 1000),
      },
    });
    await response.body.text();
    if (response.statusCode !== 200) throw new Error(`baseline POST answered ${response.statusCode}`);
  });
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  if (receiver.arrivals.length - before !== count) throw new Error('baseline: the receiver missed requests');
  return seconds;
}

interface Setup {
  api: RunningServer;
  /** Requests the service may have in flight to one endpoint (per worker process). */
  inFlight: number;
  label: string;
  stop(): Promise<void>;
}

async function embeddedSqlite(): Promise<Setup> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-webhooks-'));
  const api = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn' }));
  return {
    api,
    inFlight: WEBHOOK_ENDPOINT_CONCURRENCY,
    label: 'SQLite, embedded serve',
    stop: async () => {
      await api.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function postgresWithWorkers(): Promise<Setup> {
  const schema = `bench_wh_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-webhooks-'));
  const secretKey = 'bench-'.repeat(8);
  const workers: Started<true>[] = [];
  let api: RunningServer | undefined;
  const cleanup = cleanupOnce(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await api?.stop();
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
    await rm(dataDir, { recursive: true, force: true });
  });
  try {
    const env = { DATABASE_URL: url.toString(), DATA_DIR: dataDir, SECRET_KEY: secretKey, LOG_LEVEL: 'warn' };
    api = await startServer(loadConfig({ PORT: '0', ...env }), { runWorker: false });
    await startAll(
      POSTGRES_WORKERS,
      () =>
        startRole('worker', { ...process.env, ...env, LOG_LEVEL: 'error' }, undefined, (out) =>
          out.includes('Intake worker running') ? true : undefined,
        ),
      workers,
    );
  } catch (error) {
    await cleanup();
    throw error;
  }
  return {
    api,
    inFlight: WEBHOOK_ENDPOINT_CONCURRENCY * POSTGRES_WORKERS,
    label: `PostgreSQL, API here and ${POSTGRES_WORKERS} worker processes`,
    stop: cleanup,
  };
}

interface Account {
  accountId: string;
  testKey: string;
}

async function account(api: RunningServer, receiver: Receiver | undefined, name: string): Promise<Account> {
  const created = await createAccount(
    api.services.db.kysely,
    { email: `bench-${name}-${Date.now()}@example.com`, plan: 'agency', rateLimitPerHour: 100_000_000 },
    new Date().toISOString(),
  );
  if (receiver) {
    // A live endpoint for the drain (events recorded here), a test one for the burst (test-key sends).
    for (const key of [created.live_key, created.test_key]) {
      const registered = await fetch(`${api.url}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, events: ['intake.sent'] }),
      });
      if (registered.status !== 201) throw new Error(`registering an endpoint: ${await registered.text()}`);
    }
  }
  return { accountId: created.account_id, testKey: created.test_key };
}

/** `count` live intake.sent events through the outbox, their attempts held back in the same transactions. */
async function seedHeldDeliveries(db: Kysely<Database>, accountId: string, count: number): Promise<void> {
  for (let done = 0; done < count; done += 100) {
    await db.transaction().execute(async (trx) => {
      for (let i = done; i < Math.min(count, done + 100); i++) {
        await emitEvent(trx, {
          accountId,
          livemode: true,
          type: 'intake.sent',
          intakeId: `in_bench${String(i).padStart(18, '0')}`,
          data: {
            project_name: 'Benchmark',
            client_email: 'bench@example.com',
            sent_at: new Date().toISOString(),
          },
          occurredAt: new Date().toISOString(),
        });
      }
      await sql`update jobs set due_at = due_at + ${HELD_MS}
        where kind = ${WEBHOOK_ATTEMPT.kind} and due_at < ${Date.now() + HELD_MS / 2}`.execute(trx);
    });
  }
}

async function untilNoAttempts(db: Kysely<Database>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const left = await db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('kind', '=', WEBHOOK_ATTEMPT.kind)
      .executeTakeFirstOrThrow();
    if (Number(left.n) === 0) return;
    if (Date.now() > deadline)
      throw new Error(`${left.n} webhook attempts still not recorded after a minute`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Seconds from making the held deliveries due (one transaction, workers woken at its commit) to the last arrival. */
async function drainOnce(setup: Setup, receiver: Receiver, owner: Account, count = EVENTS): Promise<number> {
  const db = setup.api.services.db.kysely;
  await seedHeldDeliveries(db, owner.accountId, count);
  const before = receiver.arrivals.length;
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    await sql`update jobs set due_at = ${Date.now() - 1000} where kind = ${WEBHOOK_ATTEMPT.kind}`.execute(
      trx,
    );
    await notifyJobDue(trx);
  });
  await until(`${count} deliveries`, () => receiver.arrivals.length - before >= count);
  return (performance.now() - started) / 1000;
}

async function api<T>(setup: Setup, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${setup.api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status >= 300)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function drafts(setup: Setup, owner: Account, count: number): Promise<string[]> {
  const ids: string[] = [];
  await inLanes(count, SEND_CONCURRENCY, async (i) => {
    const created = await api<{ intake_id: string }>(setup, owner.testKey, 'POST', '/v1/intakes', {
      project_name: `Burst ${i}`,
      client: { email: `client${i}@example.com` },
      items: [{ key: 'note', label: 'Note', type: 'text' }],
      chase_schedule: 'off',
      send: false,
    });
    ids.push(created.intake_id);
  });
  return ids;
}

/** Sends the drafts SEND_CONCURRENCY at a time; seconds. */
async function sendAll(setup: Setup, owner: Account, ids: readonly string[]): Promise<number> {
  const started = performance.now();
  await inLanes(ids.length, SEND_CONCURRENCY, async (i) => {
    await api(setup, owner.testKey, 'POST', `/v1/intakes/${ids[i]}/send`, {});
  });
  return (performance.now() - started) / 1000;
}

function rate(count: number, seconds: number): number {
  return count / seconds;
}

async function measure(setup: Setup, receiver: Receiver): Promise<BenchResult[]> {
  const withEndpoint = await account(setup.api, receiver, 'hooked');
  const without = await account(setup.api, undefined, 'plain');
  const db = setup.api.services.db.kysely;
  const name = setup.api.services.db.dialect === 'postgres' ? 'PostgreSQL, 2 workers' : 'SQLite, embedded';
  // Warm-up, not timed: each side of each part once, so that no first round measures V8 compiling
  // one side's code while the other side's is compiled already (the bare loop's first round ran at a
  // third of its later rate when it was warmed with 100 requests).
  await bareLoop(receiver, WARM_UP, setup.inFlight);
  if (PARTS.has('drain')) {
    await drainOnce(setup, receiver, withEndpoint, WARM_UP);
    await untilNoAttempts(db);
  }
  if (PARTS.has('burst')) {
    const before = receiver.arrivals.length;
    await sendAll(setup, withEndpoint, await drafts(setup, withEndpoint, WARM_UP));
    await sendAll(setup, without, await drafts(setup, without, WARM_UP));
    await until('the warm-up intake.sent', () => receiver.arrivals.length - before >= WARM_UP);
    await untilNoAttempts(db);
  }

  const drainRounds: { service: number; baseline: number }[] = [];
  const burstRounds: { service: number; baseline: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const baselineFirst = round % 2 === 0;
    if (PARTS.has('drain')) {
      let bare = 0;
      if (baselineFirst) bare = await bareLoop(receiver, EVENTS, setup.inFlight);
      const service = await drainOnce(setup, receiver, withEndpoint);
      if (!baselineFirst) bare = await bareLoop(receiver, EVENTS, setup.inFlight);
      drainRounds.push({ service: rate(EVENTS, service), baseline: rate(EVENTS, bare) });
      process.stderr.write(
        `  ${name} drain round ${round + 1}: service ${Math.round(EVENTS / service)}/s, bare ${Math.round(EVENTS / bare)}/s\n`,
      );
      await untilNoAttempts(db);
    }
    if (!PARTS.has('burst')) continue;

    // Burst: the drafts are made outside the timing.
    const hooked = await drafts(setup, withEndpoint, EVENTS);
    const plain = await drafts(setup, without, EVENTS);
    const serviceBurst = async (): Promise<number> => {
      const before = receiver.arrivals.length;
      const started = performance.now();
      await sendAll(setup, withEndpoint, hooked);
      await until(`${EVENTS} intake.sent`, () => receiver.arrivals.length - before >= EVENTS);
      return (performance.now() - started) / 1000;
    };
    const backToBack = async (): Promise<{ sends: number; bare: number }> => {
      const sends = await sendAll(setup, without, plain);
      return { sends, bare: await bareLoop(receiver, EVENTS, setup.inFlight) };
    };
    let burst = 0;
    let apart = { sends: 0, bare: 0 };
    // The embedded worker's claims during the burst (SQLite; on PostgreSQL the workers are processes).
    const worker = embeddedWorker(setup);
    if (baselineFirst) apart = await backToBack();
    const claimsBefore = worker?.pollClaims() ?? 0;
    burst = await serviceBurst();
    const claims = (worker?.pollClaims() ?? 0) - claimsBefore;
    if (!baselineFirst) apart = await backToBack();
    burstRounds.push({ service: rate(EVENTS, burst), baseline: rate(EVENTS, apart.sends + apart.bare) });
    process.stderr.write(
      `  ${name} burst round ${round + 1}: send → delivered ${Math.round(burst * 1000)} ms; sends alone ${Math.round(apart.sends * 1000)} ms + bare deliveries ${Math.round(apart.bare * 1000)} ms${worker ? `; ${claims} claims by the embedded worker during the burst` : ''}\n`,
    );
    // Arrived is not yet recorded: nothing of this round may be left for the next.
    await untilNoAttempts(db);
  }
  const results: BenchResult[] = [];
  if (drainRounds.length > 0)
    results.push(
      printRatio({
        name: `webhooks: due deliveries drain (${name})`,
        goal: '>=0.8',
        baseline: `bare undici POST loop, ${setup.inFlight} in flight (deliveries/s)`,
        rounds: drainRounds,
      }),
    );
  if (burstRounds.length > 0)
    results.push(
      printRatio({
        name: `webhooks: send → delivered, burst of ${EVENTS} (${name})`,
        goal: '>=0.8',
        baseline: `the same sends without an endpoint, then the bare POST loop (intakes/s)`,
        rounds: burstRounds,
      }),
    );
  return results;
}

/** The worker in this process (SQLite's embedded serve); on PostgreSQL the workers are processes of their own. */
function embeddedWorker(setup: Setup): Worker | undefined {
  const { jobs, db } = setup.api.services;
  return db.dialect === 'sqlite' && jobs instanceof Worker ? jobs : undefined;
}

/** State change → arrival, one intake at a time, spaced so that changes land at every phase of a poll. */
async function idleDelays(setup: Setup, receiver: Receiver): Promise<number[]> {
  const owner = await account(setup.api, receiver, 'idle');
  const ids = await drafts(setup, owner, SAMPLES);
  const delays: number[] = [];
  for (const id of ids) {
    const before = receiver.arrivals.length;
    const started = Date.now();
    await api(setup, owner.testKey, 'POST', `/v1/intakes/${id}/send`, {});
    await until('the delivery', () => receiver.arrivals.length > before, 30_000);
    delays.push((receiver.arrivals[before]?.at ?? Date.now()) - started);
    await new Promise((resolve) => setTimeout(resolve, 20 + ((delays.length * 137) % 250)));
  }
  return delays;
}

/**
 * A burst to a receiver slower than the sends: EVENTS drafts sent 4 at a time, to the last arrival. For
 * the record (no baseline): how long, and on SQLite how many claims the embedded worker made meanwhile.
 */
async function slowReceiverBurst(
  setup: Setup,
): Promise<{ sendsMs: number; lastArrivalMs: number; cpuMs: number; claims?: number }> {
  const receiver = await startReceiver(SLOW_RECEIVER_MS);
  try {
    const owner = await account(setup.api, receiver, 'slow');
    const ids = await drafts(setup, owner, EVENTS);
    const worker = embeddedWorker(setup);
    const claimsBefore = worker?.pollClaims() ?? 0;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const sends = await sendAll(setup, owner, ids);
    await until(`${EVENTS} intake.sent to the slow receiver`, () => receiver.arrivals.length >= EVENTS);
    const lastArrivalMs = Math.round(performance.now() - started);
    const cpu = process.cpuUsage(cpuBefore);
    // This process's CPU: the API (and on SQLite the worker), the sends' client and the receiver.
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    const claims = worker ? worker.pollClaims() - claimsBefore : undefined;
    await untilNoAttempts(setup.api.services.db.kysely);
    return {
      sendsMs: Math.round(sends * 1000),
      lastArrivalMs,
      cpuMs,
      ...(claims === undefined ? {} : { claims }),
    };
  } finally {
    await receiver.close();
  }
}

async function main(): Promise<void> {
  const stopHandlingSignals = cleanUpOnSignals('worker');
  const receiver = await startReceiver();
  const figures: Record<string, unknown> = {};
  try {
    for (const database of DATABASES) {
      if (database === 'postgres' && !(await postgresReachable(POSTGRES_URL))) {
        process.stderr.write(`PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
        continue;
      }
      if (database !== 'sqlite' && database !== 'postgres') throw new Error(`unknown database ${database}`);
      const setup = database === 'sqlite' ? await embeddedSqlite() : await postgresWithWorkers();
      process.stderr.write(`${setup.label}: ${EVENTS} events, ${ROUNDS} round(s)\n`);
      try {
        const results = await measure(setup, receiver);
        const delays = PARTS.has('idle') ? await idleDelays(setup, receiver) : [];
        const sorted = [...delays].sort((a, b) => a - b);
        const slow = PARTS.has('slow') ? await slowReceiverBurst(setup) : undefined;
        figures[database] = {
          results,
          idle: { samples: SAMPLES, p50Ms: median(delays), maxMs: sorted[sorted.length - 1] },
          ...(slow ? { slowReceiver: { answerMs: SLOW_RECEIVER_MS, events: EVENTS, ...slow } } : {}),
        };
        if (delays.length > 0)
          process.stderr.write(
            `  idle: state change → delivery median ${median(delays)} ms, max ${sorted[sorted.length - 1]} ms (${SAMPLES} samples)\n`,
          );
        if (slow)
          process.stderr.write(
            `  slow receiver (answers after ${SLOW_RECEIVER_MS} ms): ${EVENTS} sends in ${slow.sendsMs} ms, last arrival after ${slow.lastArrivalMs} ms, ${slow.cpuMs} ms of this process's CPU${slow.claims === undefined ? '' : `; ${slow.claims} claims by the embedded worker`}\n`,
          );
      } finally {
        await setup.stop();
      }
    }
  } finally {
    await receiver.close();
    stopHandlingSignals();
  }
  console.log(
    JSON.stringify({
      machine: { cpus: availableParallelism(), node: process.version, loadavg1: loadavg()[0] },
      events: EVENTS,
      rounds: ROUNDS,
      ...figures,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
