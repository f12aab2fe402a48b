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
 * Environment: BENCH_WORKER_EVENTS (default 2000), BENCH_WORKER_REMINDERS (default 2000),
 * TEST_POSTGRES_URL (PostgreSQL is required).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DISPATCH_CHASE } from '../src/modules/chases/chases.jobs.js';
import { recordEvent } from '../src/modules/events/events.repository.js';
import { DEFAULT_TUNING } from '../src/modules/webhooks/dispatcher.js';
import { WEBHOOK_ATTEMPT } from '../src/modules/webhooks/webhooks.jobs.js';
import { startServer } from '../src/server.js';
import { positiveNumberFromEnv } from './load.js';
import { seedDueReminders } from './seed.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Math.round(positiveNumberFromEnv('BENCH_WORKER_EVENTS', 2000));
const REMINDERS = Math.round(positiveNumberFromEnv('BENCH_WORKER_REMINDERS', 2000));
/**
 * `node --import tsx`: one process. (The tsx CLI runs the program in a child process: a SIGKILL would
 * kill the wrapper and leave the service running.)
 */
const TSX = ['--import', 'tsx'];
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

function startWorkerProcess(env: NodeJS.ProcessEnv): Promise<{ stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...TSX, 'src/cli.ts', 'worker'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 60_000);
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Intake worker running')) {
        clearTimeout(timer);
        resolve({
          stop: () =>
            new Promise<void>((done) => {
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}: ${out}`)));
  });
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
}

async function scenario(workers: number): Promise<{ webhooks: Drained; reminders: Drained }> {
  const schema = `bench_w_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-workers-'));
  const [receiver, sink] = await Promise.all([startReceiver(), startSink()]);
  const secretKey = 'bench-'.repeat(8);
  // An API in this process for the setup (it migrates the schema); the work goes to worker processes.
  const api = await startServer(
    loadConfig({
      PORT: '0',
      DATA_DIR: dataDir,
      DATABASE_URL: url.toString(),
      SECRET_KEY: secretKey,
      LOG_LEVEL: 'warn',
    }),
    { runWorker: false },
  );
  const running: { stop(): Promise<void> }[] = [];
  try {
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
      body: JSON.stringify({ url: receiver.url, events: ['intake.sent'] }),
    });
    if (registered.status !== 201) throw new Error(`registering the endpoint: ${await registered.text()}`);
    for (let done = 0; done < EVENTS; done += 100) {
      await k.transaction().execute(async (trx) => {
        for (let i = done; i < Math.min(EVENTS, done + 100); i++) {
          await recordEvent(trx, {
            accountId: account.account_id,
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
      });
    }
    await seedDueReminders(k, account.account_id, REMINDERS, HELD);
    await sql`update jobs set due_at = due_at + ${HELD}`.execute(k);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url.toString(),
      DATA_DIR: dataDir,
      SMTP_URL: sink.url,
      SECRET_KEY: secretKey,
      LOG_LEVEL: 'error',
    };
    running.push(...(await Promise.all(Array.from({ length: workers }, () => startWorkerProcess(env)))));

    const drain = async (kind: string, count: number, received: () => number): Promise<Drained> => {
      const before = received();
      const started = performance.now();
      await sql`update jobs set due_at = ${Date.now() - 1000} where kind = ${kind}`.execute(k);
      await until(`${count} ${kind}`, () => received() - before >= count).catch(async (error: unknown) => {
        const jobs = await sql<{ kind: string; n: number; error: string | null }>`
          select kind, count(*)::int as n, max(last_error) as error from jobs group by kind`.execute(k);
        throw new Error(`${String(error)}; jobs left: ${JSON.stringify(jobs.rows)}`);
      });
      const seconds = (performance.now() - started) / 1000;
      process.stderr.write(`  ${workers} worker(s), ${kind}: ${count} in ${seconds.toFixed(2)} s\n`);
      return { count, seconds, perSecond: count / seconds };
    };
    const webhooks = await drain(WEBHOOK_ATTEMPT.kind, EVENTS, receiver.received);
    const reminders = await drain(DISPATCH_CHASE.kind, REMINDERS, sink.received);
    return { webhooks, reminders };
  } finally {
    await Promise.all(running.map((r) => r.stop()));
    await api.stop();
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
    await Promise.all([receiver.close(), sink.close()]);
    await rm(dataDir, { recursive: true, force: true });
  }
}

const one = await scenario(1);
const three = await scenario(3);
console.log(
  [
    `Machine: ${os.cpus().length} CPU(s), Node ${process.version}; PostgreSQL; per-endpoint concurrency ${DEFAULT_TUNING.perEndpointConcurrency} per process.`,
    '',
    '| work | 1 worker: per second | 3 workers: per second | 3 ÷ 1 |',
    '|---|---|---|---|',
    `| webhook deliveries (${EVENTS}, one endpoint) | ${Math.round(one.webhooks.perSecond)} | ${Math.round(three.webhooks.perSecond)} | ${(three.webhooks.perSecond / one.webhooks.perSecond).toFixed(2)}× |`,
    `| reminders sent (${REMINDERS}, SMTP) | ${Math.round(one.reminders.perSecond)} | ${Math.round(three.reminders.perSecond)} | ${(three.reminders.perSecond / one.reminders.perSecond).toFixed(2)}× |`,
  ].join('\n'),
);
console.log('\n```json\n' + JSON.stringify({ one, three }) + '\n```');
