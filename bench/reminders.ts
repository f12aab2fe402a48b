/**
 * Reminder benchmark (see "Reminders" in bench/README.md):
 *
 * 1. Dispatch: BENCH_INTAKES live intakes, each with its first reminder due now, are dispatched
 *    through the real path (claim, checks, render, SMTP, record, plan the next reminder) into an SMTP
 *    server on 127.0.0.1 that accepts and discards, BENCH_WORKERS reminders in flight: by one job
 *    worker's poll loop with as many slots (WORKER_CONCURRENCY), as a `worker` or `serve` process runs
 *    them, where a slot takes the next reminder once the last one's outcome is handed over for
 *    recording. BENCH_REMINDER_RUN=due runs them instead as before 2026-11-28 (evening): BENCH_WORKERS
 *    workers each calling runDue, one reminder after another, each waiting for its outcome's commit.
 *    In BENCH_REMINDER_ROUNDS alternating rounds against the baseline: a plain nodemailer loop (pooled,
 *    as many connections, as many messages in flight as there are workers, Nagle off like the
 *    service's mailer) sending as many messages of the same size to the same server. The ratio of the
 *    rates is printed as a BENCH_RESULT line (bench/result.ts).
 * 2. Finding due work: the worker's claim (nothing due) timed with 1,000 and with BENCH_SCHEDULED_ROWS
 *    future jobs in the table, and the query plans (EXPLAIN) on both dialects.
 *
 * BENCH_PROFILE=<file>: the main thread's CPU profile of the last dispatch run (service side only) is
 * written to that file.
 *
 * Runs on SQLite, and on PostgreSQL when TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test)
 * answers (its own schema, dropped afterwards). BENCH_DATABASES=sqlite|postgres|sqlite,postgres picks.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { loadConfig } from '../src/config.js';
import { definedKinds } from '../src/jobs/jobs.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { closeServices, createServices, createWorker } from '../src/server.js';
import type { AppServices } from '../src/services.js';
import { startCpuProfile } from './cpu-profile.js';
import { printRatio, QUICK } from './result.js';
import { seedDueReminders } from './seed.js';

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

const INTAKES = positiveInt('BENCH_INTAKES', QUICK ? 300 : 2_000);
const ROUNDS = positiveInt('BENCH_REMINDER_ROUNDS', QUICK ? 1 : 3);
const WORKERS = positiveInt('BENCH_WORKERS', 4);
const RUN = process.env.BENCH_REMINDER_RUN || 'poll';
if (RUN !== 'poll' && RUN !== 'due') throw new Error('BENCH_REMINDER_RUN: poll or due');
// The poll loop's run ends when the SMTP server has every reminder.
if (RUN === 'poll' && process.env.BENCH_NO_SMTP)
  throw new Error('BENCH_NO_SMTP needs BENCH_REMINDER_RUN=due');
const SCHEDULED_ROWS = positiveInt('BENCH_SCHEDULED_ROWS', QUICK ? 20_000 : 1_000_000);
const CLAIM_SAMPLES = positiveInt('BENCH_CLAIM_SAMPLES', 200);
/** With a file name: the main thread's CPU profile of the last dispatch run is written there. */
const PROFILE = process.env.BENCH_PROFILE;
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function startSink() {
  let received = 0;
  let bytes = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
      stream.on('end', () => {
        received++;
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}?from=bench%40example.test&maxConnections=${Math.max(5, WORKERS)}`,
    port,
    received: () => received,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 5432) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

type Sink = Awaited<ReturnType<typeof startSink>>;

/** Resolves once `done()` holds (checked every 2 ms), or throws after two minutes. */
async function until(done: () => boolean): Promise<void> {
  const deadline = performance.now() + 120_000;
  while (!done()) {
    if (performance.now() > deadline) throw new Error('The reminders were not all sent within two minutes');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * The baseline: `count` messages of `size` bytes (half HTML, half text) through a plain pooled
 * nodemailer transport, WORKERS in flight. Seconds.
 */
async function nodemailerLoop(sink: Sink, count: number, size: number): Promise<number> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: sink.port,
    secure: false,
    pool: true,
    maxConnections: Math.max(5, WORKERS),
    ignoreTLS: true,
    getSocket: (_options, callback) => {
      const socket = net.connect({ host: '127.0.0.1', port: sink.port });
      socket.setNoDelay(true);
      socket.once('connect', () => callback(null, { connection: socket }));
      socket.once('error', (error) => callback(error, {}));
    },
  });
  const half = Math.max(100, Math.round(size / 2));
  const html = `<p>${'Your intake is waiting. '.repeat(Math.ceil(half / 24)).slice(0, half)}</p>`;
  const text = 'Your intake is waiting. '.repeat(Math.ceil(half / 24)).slice(0, half);
  const before = sink.received();
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      await transport.sendMail({
        from: 'bench@example.test',
        to: `client${i}@example.com`,
        subject: 'A reminder about your intake',
        text,
        html,
      });
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, lane));
  const seconds = (performance.now() - started) / 1000;
  transport.close();
  if (sink.received() - before !== count) throw new Error('baseline: the SMTP server missed messages');
  return seconds;
}

async function dispatchBench(services: AppServices, sink: Sink, count: number) {
  const db = services.db.kysely;
  const INTAKES = count;
  const account = await createAccount(
    db,
    { email: `bench-${Date.now()}@example.test`, name: 'Bench Studio', plan: 'agency' },
    new Date().toISOString(),
  );
  const seedStart = performance.now();
  await seedDueReminders(db, account.account_id, INTAKES, -1000);
  const seedSeconds = (performance.now() - seedStart) / 1000;

  const before = sink.received();
  const bytesBefore = sink.bytes();
  const profiler = PROFILE ? await startCpuProfile(PROFILE) : undefined;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let claims: number | undefined;
  if (RUN === 'poll') {
    // As a worker process runs them: its poll loop, WORKERS slots (the config's WORKER_CONCURRENCY).
    const worker = createWorker(services);
    worker.start();
    await until(() => sink.received() - before >= INTAKES);
    // Stopping lets the handlers running finish: the last outcomes are recorded when it returns.
    await worker.stop();
    claims = worker.pollClaims();
  } else {
    const workers = Array.from({ length: WORKERS }, () => createWorker(services));
    await Promise.all(
      workers.map(async (worker) => {
        while ((await worker.runDue({ livemode: true, limit: 50 })) > 0) {
          /* keep claiming until nothing is due */
        }
      }),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  if (profiler) await profiler.stop();
  const delivered = sink.received() - before;
  const sent = await db
    .selectFrom('chases')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', account.account_id)
    .where('status', '=', 'sent')
    .executeTakeFirstOrThrow();
  const next = await db
    .selectFrom('chases')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', account.account_id)
    .where('status', '=', 'scheduled')
    .executeTakeFirstOrThrow();
  if (
    Number(sent.n) !== INTAKES ||
    (delivered !== INTAKES && !process.env.BENCH_NO_SMTP) ||
    Number(next.n) !== INTAKES
  ) {
    // The reminders that neither went out nor wait, with what their dispatch recorded: the clue to why.
    const others = await db
      .selectFrom('chases')
      .select(['status', 'error'])
      .where('account_id', '=', account.account_id)
      .where('status', 'not in', ['sent', 'scheduled'])
      .limit(5)
      .execute();
    const recorded = others.map((row) => `${row.status}${row.error ? ` (${row.error})` : ''}`).join('; ');
    throw new Error(
      `Expected ${INTAKES} reminders sent, delivered and re-planned; got ${String(sent.n)} sent, ${delivered} delivered, ${String(next.n)} planned` +
        (recorded ? `; others: ${recorded}` : ''),
    );
  }
  return {
    intakes: INTAKES,
    workers: WORKERS,
    seedSeconds,
    seconds,
    perSecond: INTAKES / seconds,
    /** The process's CPU (user and system, the SMTP server's included) per reminder. */
    cpuMsPerReminder: (cpu.user + cpu.system) / 1000 / INTAKES,
    messageBytes: Math.round((sink.bytes() - bytesBefore) / Math.max(1, delivered)),
    /** The claims the worker made (its poll loop; not counted with runDue). */
    claims,
  };
}

/** Future (not due) dispatch jobs, so the table holds `total` scheduled rows. */
async function fillScheduled(
  services: AppServices,
  accountId: string,
  from: number,
  to: number,
): Promise<void> {
  const db = services.db.kysely;
  const base = Date.now() + 86_400_000;
  if (services.db.dialect === 'postgres') {
    await sql`insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, attempts, locked_until, last_error, created_at)
      select 'job_fill_' || n, ${accountId}, 1, 'dispatch_chase', 'fill/' || n, '{"chase_id":"none"}', ${base}::bigint + n * 1000, 0, null, null, '2026-01-01T00:00:00.000Z'
      from generate_series(${from}::int, ${to}::int) as n`.execute(db);
    await sql`analyze jobs`.execute(db);
  } else {
    await sql`insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, attempts, locked_until, last_error, created_at)
      with recursive seq(n) as (select ${from} union all select n + 1 from seq where n < ${to})
      select 'job_fill_' || n, ${accountId}, 1, 'dispatch_chase', 'fill/' || n, '{"chase_id":"none"}', ${base} + n * 1000, 0, null, null, '2026-01-01T00:00:00.000Z'
      from seq`.execute(db);
    await sql`analyze`.execute(db);
  }
}

async function claimMicros(services: AppServices): Promise<{ meanUs: number; p50Us: number; p99Us: number }> {
  const worker = createWorker(services);
  const samples: number[] = [];
  for (let i = 0; i < CLAIM_SAMPLES + 20; i++) {
    const t = performance.now();
    const ran = await worker.runDue({ limit: 20 });
    if (ran !== 0) throw new Error('nothing should be due during the claim benchmark');
    if (i >= 20) samples.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  const pick = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? 0;
  return { meanUs: samples.reduce((s, v) => s + v, 0) / samples.length, p50Us: pick(0.5), p99Us: pick(0.99) };
}

async function explainClaim(services: AppServices): Promise<string> {
  const db = services.db.kysely;
  const now = Date.now();
  const kinds = definedKinds();
  if (services.db.dialect === 'postgres') {
    const { rows } = await sql<{ 'QUERY PLAN': string }>`explain select * from jobs
      where due_at <= ${now} and (locked_until is null or locked_until < ${now}) and kind in (${sql.join(kinds)})
      order by due_at, id limit 20 for update skip locked`.execute(db);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  }
  const { rows } = await sql<{ detail: string }>`explain query plan update jobs set locked_until = ${now}
      where id in (select id from jobs where due_at <= ${now} and (locked_until is null or locked_until < ${now})
      and kind in (${sql.join(kinds)}) order by due_at, id limit 20) returning *`.execute(db);
  return rows.map((r) => r.detail).join('\n');
}

/** PostgreSQL: the blocks the claim query touches (EXPLAIN ANALYZE BUFFERS), independent of machine load. */
async function claimBuffers(services: AppServices): Promise<number | null> {
  if (services.db.dialect !== 'postgres') return null;
  const now = Date.now();
  const { rows } = await sql<{
    'QUERY PLAN': { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }[];
  }>`
    explain (analyze, buffers, format json) select * from jobs
      where due_at <= ${now} and (locked_until is null or locked_until < ${now}) and kind in (${sql.join(definedKinds())})
      order by due_at, id limit 20 for update skip locked`.execute(services.db.kysely);
  const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
  return plan ? plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] : null;
}

async function scanBench(services: AppServices) {
  const db = services.db.kysely;
  const account = await createAccount(
    db,
    { email: `scan-${Date.now()}@example.test`, name: 'Scan', plan: 'agency' },
    new Date().toISOString(),
  );
  // Nothing may be due: the dispatch run re-planned every reminder days ahead.
  await fillScheduled(services, account.account_id, 1, 1000);
  const smallRows = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const small = await claimMicros(services);
  const smallBlocks = await claimBuffers(services);
  const fillStart = performance.now();
  await fillScheduled(services, account.account_id, 1001, SCHEDULED_ROWS);
  const fillSeconds = (performance.now() - fillStart) / 1000;
  const large = await claimMicros(services);
  const largeBlocks = await claimBuffers(services);
  const rows = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return {
    small: { ...small, blocks: smallBlocks, rows: Number(smallRows.n) },
    large: { ...large, blocks: largeBlocks },
    totalRows: Number(rows.n),
    fillSeconds,
    plan: await explainClaim(services),
  };
}

async function runOn(database: 'sqlite' | 'postgres') {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-reminders-'));
  const sink = await startSink();
  let schema: string | undefined;
  let databaseUrl: string | undefined;
  if (database === 'postgres') {
    schema = `bench_${process.pid}_${Date.now().toString(36)}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('schema', schema);
    databaseUrl = url.toString();
  }
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: String(WORKERS),
    ...(process.env.BENCH_NO_SMTP ? {} : { SMTP_URL: sink.url }),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  const services = await createServices(config);
  try {
    // Warm-up (not counted): compiles the email's shape, opens the pools.
    const warm = await dispatchBench(services, sink, Math.min(100, INTAKES));
    const rounds: { service: number; baseline: number }[] = [];
    let dispatch = warm;
    for (let round = 0; round < ROUNDS; round++) {
      const baselineFirst = round % 2 === 0;
      let bare = 0;
      if (baselineFirst) bare = await nodemailerLoop(sink, INTAKES, warm.messageBytes);
      dispatch = await dispatchBench(services, sink, INTAKES);
      if (!baselineFirst) bare = await nodemailerLoop(sink, INTAKES, warm.messageBytes);
      rounds.push({ service: dispatch.perSecond, baseline: INTAKES / bare });
      console.error(
        `${database} round ${round + 1}: ${INTAKES} reminders at ${dispatch.perSecond.toFixed(0)}/s, ${dispatch.cpuMsPerReminder.toFixed(2)} ms of CPU each${dispatch.claims === undefined ? '' : `, ${dispatch.claims} claims`}; nodemailer loop ${(INTAKES / bare).toFixed(0)}/s (${warm.messageBytes} bytes a message)`,
      );
    }
    const ratio = printRatio({
      name: `reminders: due reminders sent over SMTP (${database === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${RUN === 'poll' ? `one worker, ${WORKERS} slots` : `${WORKERS} workers, runDue`})`,
      goal: '>=0.5',
      baseline: `plain nodemailer loop, ${WORKERS} in flight, same SMTP server and message size (messages/s)`,
      rounds,
    });
    const scan = await scanBench(services);
    return { database, dispatch, ratio, scan };
  } finally {
    await closeServices(services);
    await sink.close();
    if (schema) {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`drop schema if exists "${schema}" cascade`);
      await admin.end();
    }
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const wanted = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  const databases: ('sqlite' | 'postgres')[] = [];
  if (wanted.includes('sqlite')) databases.push('sqlite');
  if (wanted.includes('postgres')) {
    if (await reachable(POSTGRES_URL)) databases.push('postgres');
    else console.error(`SKIPPED: PostgreSQL (${new URL(POSTGRES_URL).host} is not reachable).`);
  }
  const load = os.loadavg()[0] ?? 0;
  const results = [];
  for (const database of databases) results.push(await runOn(database));
  const us = (v: number) => v.toFixed(0);
  console.log(`\n| Database | Intakes | Workers | Reminders/s | Seconds |`);
  console.log(`| -------- | ------: | ------: | ----------: | ------: |`);
  for (const r of results) {
    console.log(
      `| ${r.database} | ${r.dispatch.intakes.toLocaleString('en')} | ${r.dispatch.workers} | ${r.dispatch.perSecond.toFixed(0)} | ${r.dispatch.seconds.toFixed(1)} |`,
    );
  }
  console.log(
    `\n| Database | Scheduled rows | Claim mean (µs) | p50 (µs) | p99 (µs) | Blocks read (PostgreSQL) |`,
  );
  console.log(
    `| -------- | -------------: | --------------: | -------: | -------: | -----------------------: |`,
  );
  for (const r of results) {
    console.log(
      `| ${r.database} | ${r.scan.small.rows.toLocaleString('en')} | ${us(r.scan.small.meanUs)} | ${us(r.scan.small.p50Us)} | ${us(r.scan.small.p99Us)} | ${r.scan.small.blocks ?? 'n/a'} |`,
    );
    console.log(
      `| ${r.database} | ${r.scan.totalRows.toLocaleString('en')} | ${us(r.scan.large.meanUs)} | ${us(r.scan.large.p50Us)} | ${us(r.scan.large.p99Us)} | ${r.scan.large.blocks ?? 'n/a'} |`,
    );
  }
  for (const r of results) console.log(`\n${r.database} claim plan:\n${r.scan.plan}`);
  console.log(
    JSON.stringify(
      { node: process.version, loadAverageBefore: load, loadAverageAfter: os.loadavg()[0], results },
      null,
      2,
    ),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
