/**
 * A claim beside a key far behind (bench/README.md, "Scale: costs against table size"): a worker
 * holds its whole allowance of one webhook endpoint (its attempts hang, as against an endpoint that
 * does not answer) while that endpoint's backlog waits, due, at the front of the kind; each operation
 * enqueues an attempt for another endpoint and waits until the worker has started it. Timed beside a
 * backlog of 1,000 and one of BENCH_CLAIM_BACKLOG, side by side, in alternating rounds; the ratio is
 * the large backlog's rate over the small one's (1 = no growth; within 2× = at least 0.5), printed as
 * a BENCH_RESULT line (bench/result.ts).
 *
 * The worker is the job engine's, with webhook attempts' limits (4 per endpoint, 12 claimed ahead);
 * the handler is the benchmark's, so no request goes out. SQLite, then PostgreSQL (TEST_POSTGRES_URL;
 * skipped with a notice when it does not answer).
 *
 * A second ratio, the same way: a claim past jobs given up on. Each side also holds as many jobs of a
 * kind of the bench's own given up on (a day of failed sends), older than any due job; each operation
 * enqueues one job of that kind, due, and claims and runs it (`Worker.runDue`).
 *
 * Environment: BENCH_CLAIM_BACKLOG (default 100,000; 10,000 with BENCH_QUICK=1), BENCH_CLAIM_ROUNDS
 * (default 3; 1 quick), BENCH_CLAIM_OPS (operations per side and round, default 200; 50 quick),
 * BENCH_CLAIM_DATABASES (default sqlite,postgres).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase, type Db } from '../src/db/database.js';
import { z } from 'zod';
import { defineJob, enqueueJob } from '../src/jobs/jobs.js';
import { GAVE_UP_LOCKED_UNTIL, Worker } from '../src/jobs/worker.js';
import { systemClock } from '../src/lib/clock.js';
import { WEBHOOK_ATTEMPT } from '../src/modules/webhooks/webhooks.jobs.js';
import { positiveNumberFromEnv } from './load.js';
import { alternatingRounds, printRatio, QUICK, type BenchResult } from './result.js';
import { dropSchema, postgresReachable } from './processes.js';

const SMALL = 1_000;
const LARGE = Math.round(positiveNumberFromEnv('BENCH_CLAIM_BACKLOG', QUICK ? 10_000 : 100_000));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_CLAIM_ROUNDS', QUICK ? 1 : 3));
const OPS = Math.round(positiveNumberFromEnv('BENCH_CLAIM_OPS', QUICK ? 50 : 200));
const DATABASES = (process.env.BENCH_CLAIM_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim());
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ACCOUNT = 'acct_bench_claims';
const BUSY = 'endpoint_busy';
const CHUNK = 500;

type Dialect = 'sqlite' | 'postgres';

interface Side {
  backlog: number;
  /** Enqueues one attempt for a new endpoint and resolves once the worker has started it. */
  op(): Promise<void>;
  /** Enqueues one job of the bench's kind, due, and claims and runs it past the jobs given up on. */
  pastGivenUp(): Promise<void>;
  stop(): Promise<void>;
}

/** The bench's own kind, of which each side holds as many jobs given up on as its backlog. */
const ECHO = defineJob('bench_claims.echo', z.strictObject({ n: z.number().int() }), { testOnly: true });

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * `count` due attempts of the busy endpoint, oldest first, and `count` jobs of the bench's kind given
 * up on, older still, written in a few multi-row inserts.
 */
async function fillBacklog(db: Db, count: number): Promise<void> {
  const due = Date.now() - count - 60_000;
  const created_at = new Date().toISOString();
  await db.kysely.transaction().execute(async (trx) => {
    for (let start = 0; start < count; start += CHUNK) {
      const numbers = Array.from({ length: Math.min(CHUNK, count - start) }, (_, i) => start + i);
      await trx
        .insertInto('jobs')
        .values(
          numbers.map((n) => ({
            id: `job_busy_${String(n).padStart(8, '0')}`,
            account_id: ACCOUNT,
            livemode: 1,
            kind: WEBHOOK_ATTEMPT.kind,
            subject_id: `whd_busy_${n}`,
            payload: JSON.stringify({ delivery_id: `whd_busy_${n}`, attempt: 1 }),
            due_at: due + n,
            created_at,
            concurrency_key: BUSY,
          })),
        )
        .execute();
      await trx
        .insertInto('jobs')
        .values(
          numbers.map((n) => ({
            id: `job_failed_${String(n).padStart(8, '0')}`,
            account_id: ACCOUNT,
            livemode: 1,
            kind: ECHO.kind,
            subject_id: `failed_${n}`,
            payload: JSON.stringify({ n }),
            due_at: due - count + n,
            attempts: 8,
            locked_until: GAVE_UP_LOCKED_UNTIL,
            last_error: 'the relay refused the message',
            created_at,
          })),
        )
        .execute();
    }
  });
}

/** A database holding `backlog` due attempts of one endpoint, and a worker holding its allowance of them. */
async function open(dialect: Dialect, backlog: number): Promise<Side> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-claims-'));
  const schema = `bench_claims_${process.pid}_${backlog}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const databaseUrl = dialect === 'postgres' ? url.toString() : undefined;
  const db = openDatabase({ databaseUrl, dataDir });
  const waiting = new Map<string, () => void>();
  let release: () => void = () => undefined;
  const hanging = new Promise<void>((resolve) => (release = resolve));
  let busyStarted = 0;
  const worker = new Worker({ db, clock: systemClock, logger: silent, pollIntervalMs: 1_000 });
  // Another worker, not polling, for the bench's kind alone: runDue claims and runs what is due.
  const echoes = new Worker({ db, clock: systemClock, logger: silent, pollIntervalMs: 1_000 });
  echoes.register(ECHO, () => Promise.resolve());
  worker.register(WEBHOOK_ATTEMPT, async (job) => {
    if (job.payload.delivery_id.startsWith('whd_busy_')) {
      busyStarted++;
      await hanging;
      return;
    }
    waiting.get(job.payload.delivery_id)?.();
  });
  const stop = async () => {
    release();
    await worker.stop(0);
    await db.close();
    if (dialect === 'postgres') await dropSchema(POSTGRES_URL, schema);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await migrateToLatest(db, databaseUrl);
    const started = performance.now();
    await fillBacklog(db, backlog);
    // As autovacuum would have by now: the planner knows the table's size.
    if (dialect === 'postgres') await sql`analyze jobs`.execute(db.kysely);
    worker.start();
    while (busyStarted < 4) await new Promise((resolve) => setTimeout(resolve, 10));
    process.stderr.write(
      `  ${dialect}: ${backlog.toLocaleString('en')} attempts of one endpoint due, the worker holding its allowance (${((performance.now() - started) / 1000).toFixed(1)} s)\n`,
    );
    let next = 0;
    return {
      backlog,
      async pastGivenUp() {
        await enqueueJob(db.kysely, {
          accountId: ACCOUNT,
          livemode: true,
          kind: ECHO,
          subjectId: 'echo',
          payload: { n: next++ },
          dueAt: Date.now(),
        });
        if ((await echoes.runDue()) !== 1) throw new Error('the due job was not claimed');
      },
      async op() {
        const delivery = `whd_other_${next++}`;
        const ran = new Promise<void>((resolve) => waiting.set(delivery, resolve));
        await enqueueJob(db.kysely, {
          accountId: ACCOUNT,
          livemode: true,
          kind: WEBHOOK_ATTEMPT,
          subjectId: delivery,
          payload: { delivery_id: delivery, attempt: 1 },
          dueAt: Date.now(),
          concurrencyKey: `endpoint_${next}`,
        });
        worker.nudge();
        await ran;
        waiting.delete(delivery);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Operations per second, OPS one after another. */
async function rate(op: () => Promise<void>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < OPS; i++) await op();
  return OPS / ((performance.now() - started) / 1000);
}

const MEASURES = {
  endpoint: {
    op: (side: Side) => () => side.op(),
    title: "another endpoint's attempt claimed beside one {n} behind",
    baseline: 'the same beside one {n} behind',
  },
  givenUp: {
    op: (side: Side) => () => side.pastGivenUp(),
    title: 'a due job claimed past {n} jobs given up on',
    baseline: 'the same past {n}',
  },
} as const;
type Measure = keyof typeof MEASURES;

async function bench(dialect: Dialect): Promise<BenchResult[]> {
  const small = await open(dialect, SMALL);
  let large: Side | undefined;
  try {
    large = await open(dialect, LARGE);
    const rounds = await alternatingRounds({
      small,
      large,
      names: Object.keys(MEASURES) as Measure[],
      rounds: ROUNDS,
      rateOf: (name, side) => rate(MEASURES[name].op(side)),
      onRound: (name, round, entry) =>
        process.stderr.write(
          `  ${dialect} round ${round + 1}, ${MEASURES[name].title.replace('{n}', 'N')}: ${Math.round(entry.service)}/s at N = ${LARGE.toLocaleString('en')}, ${Math.round(entry.baseline)}/s at ${SMALL.toLocaleString('en')}\n`,
        ),
    });
    const label = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const size = (text: string, n: number) => text.replace('{n}', n.toLocaleString('en'));
    return (Object.keys(MEASURES) as Measure[]).map((name) =>
      printRatio({
        name: `scale: ${size(MEASURES[name].title, LARGE)} (${label})`,
        goal: '>=0.5',
        baseline: `${size(MEASURES[name].baseline, SMALL)} (per second; within 2× = at least 0.5)`,
        rounds: rounds.get(name) ?? [],
      }),
    );
  } finally {
    await large?.stop();
    await small.stop();
  }
}

const results: BenchResult[] = [];
for (const dialect of DATABASES) {
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`unknown database ${dialect}`);
  if (dialect === 'postgres' && !(await postgresReachable(POSTGRES_URL))) {
    process.stderr.write(`PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
    continue;
  }
  results.push(...(await bench(dialect)));
}
console.log(
  JSON.stringify({ small: SMALL, large: LARGE, rounds: ROUNDS, ops: OPS, loadavg1: loadavg()[0], results }),
);
