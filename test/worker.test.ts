import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, type Kysely, type KyselyPlugin } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { migrateToLatest, openDatabase, type Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import {
  cancelJobs,
  defineJob,
  definedKinds,
  enqueueJob,
  JobLeaseLostError,
  type AnyJobKind,
} from '../src/jobs/jobs.js';
import {
  DEFAULT_LEASE_MS,
  GAVE_UP_LOCKED_UNTIL,
  MAX_ATTEMPTS,
  RETRY_DELAYS_MS,
  Worker,
  type WorkerLogger,
} from '../src/jobs/worker.js';
import { systemClock } from '../src/lib/clock.js';
import { DATABASES, TEST_POSTGRES_URL, type DatabaseKind } from './helpers/env.js';
import { ManualClock } from './helpers/manual-clock.js';
import { planOf } from './helpers/plans.js';

// Test-only kinds: defined like production ones, but left out of the production start-up check.
const Echo = defineJob('test_worker.echo', z.strictObject({ n: z.number().int() }), { testOnly: true });
const Other = defineJob('test_worker.other', z.strictObject({}), { testOnly: true });
/** A kind whose handlers may run for 2 s, whatever the worker's lease. */
const Long = defineJob('test_worker.long', z.strictObject({ ms: z.number().int() }), {
  testOnly: true,
  timeoutMs: 2_000,
});
/** A kind given 50 ms. */
const Brief = defineJob('test_worker.brief', z.strictObject({}), { testOnly: true, timeoutMs: 50 });
/** A send that must not be repeated. */
const Once = defineJob('test_worker.once', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  atMostOnce: true,
});
/** At most once from where its handler says the send begins. */
const OnceMarked = defineJob('test_worker.once_marked', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  atMostOnce: true,
  marksIrreversible: true,
});
/** At most once, two at a time. */
const OnceTwo = defineJob('test_worker.once_two', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  atMostOnce: true,
  concurrency: 2,
});
/** Two at once per key (a webhook endpoint), eight of the kind. */
const Keyed = defineJob('test_worker.keyed', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  concurrency: 8,
  keyConcurrency: 2,
});
/** One at once per key, and a dozen of a busy key claimed ahead (a webhook backlog). */
const KeyedAhead = defineJob('test_worker.keyed_ahead', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  concurrency: 8,
  keyConcurrency: 1,
  keyPrefetch: 5,
});
/** A kind with one slot of its own (a slow mail relay). */
const Slow = defineJob('test_worker.slow', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  concurrency: 1,
});

interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

function recordingLogger(): WorkerLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  };
}

/**
 * Two handles on one database, as two processes would have: SQLite, two connections to one file;
 * PostgreSQL, two pools on one fresh schema.
 */
async function openTwinDatabases(database: DatabaseKind): Promise<{ a: Db; b: Db; close(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-worker-'));
  let url: string | undefined;
  let schema: string | undefined;
  if (database === 'postgres') {
    schema = `t_w_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const target = new URL(TEST_POSTGRES_URL);
    target.searchParams.set('schema', schema);
    url = target.toString();
  }
  const a = openDatabase({ databaseUrl: url, dataDir });
  await migrateToLatest(a, url);
  const b = openDatabase({ databaseUrl: url, dataDir });
  return {
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      if (schema) {
        const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
        await client.connect();
        try {
          await client.query(`drop schema if exists "${schema}" cascade`);
        } finally {
          await client.end();
        }
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** One turn of the event loop, as a handler doing I/O would take. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await sleep(5);
  }
}

describe('job registry', () => {
  it('keeps test-only kinds out of the production kinds, and refuses a second definition', () => {
    expect(definedKinds()).not.toContain(Echo.kind);
    expect(() => defineJob('test_worker.echo', z.object({}))).toThrow(/already defined/);
    expect(() => defineJob('Bad Kind', z.object({}))).toThrow(/must match/);
    expect(() => defineJob('test_worker.ahead_alone', z.object({}), { keyPrefetch: 2 })).toThrow(
      /needs keyConcurrency/,
    );
    expect(() =>
      defineJob('test_worker.ahead_negative', z.object({}), { keyConcurrency: 1, keyPrefetch: -1 }),
    ).toThrow(/keyPrefetch must be a whole number/);
  });
});

describe.each(DATABASES)('job worker on %s', (database) => {
  let dbs: Awaited<ReturnType<typeof openTwinDatabases>>;
  let db: Db;
  let clock: ManualClock;
  const accountId = 'acct_worker_test';

  beforeAll(async () => {
    dbs = await openTwinDatabases(database);
    db = dbs.a;
  });
  afterAll(async () => dbs.close());
  beforeEach(async () => {
    await db.kysely.deleteFrom('jobs').execute();
    clock = new ManualClock(Date.UTC(2030, 0, 1));
  });

  function newWorker(on: Db = db, logger: WorkerLogger = recordingLogger(), batchSize?: number): Worker {
    return new Worker({ db: on, clock, logger, pollIntervalMs: 10, batchSize });
  }

  function enqueue(
    kind: AnyJobKind,
    payload: unknown,
    dueInMs = 0,
    extra: { livemode?: boolean; subjectId?: string } = {},
  ) {
    return enqueueJob(db.kysely, {
      accountId,
      livemode: extra.livemode ?? true,
      kind,
      subjectId: extra.subjectId ?? 'in_subject',
      payload,
      dueAt: clock.now().getTime() + dueInMs,
    });
  }

  /** A follow-up job, an hour away: what a handler's outcome records here. */
  const followUp = (trx: Kysely<Database>, subjectId: string) =>
    enqueueJob(trx, {
      accountId,
      livemode: true,
      kind: Other,
      subjectId,
      payload: {},
      dueAt: clock.now().getTime() + 3_600_000,
    });

  /** A worker whose claim statements are kept, with their values, while `keep()` says so. */
  function claimRecordingWorker(keep: () => boolean = () => true): {
    worker: Worker;
    claims: CompiledQuery[];
  } {
    const claims: CompiledQuery[] = [];
    const executor = db.kysely.getExecutor();
    const recording: KyselyPlugin = {
      transformQuery: ({ node, queryId }) => {
        const compiled = executor.compileQuery(node, queryId);
        if (keep() && compiled.sql.includes('update jobs set locked_until')) claims.push(compiled);
        return node;
      },
      transformResult: ({ result }) => Promise.resolve(result),
    };
    const worker = new Worker({
      db: { ...db, kysely: db.kysely.withPlugin(recording) },
      clock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
    });
    return { worker, claims };
  }

  const jobRow = (id: string) =>
    db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  const jobCount = async () =>
    Number(
      (
        await db.kysely
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /**
   * An at-most-once job whose run hangs (as if its worker died): once the lease has run out, `other`
   * takes it over and gives it up without running it, its attempts counted.
   */
  async function expectTakenOverUnrun(other: Worker, id: string, attempts: number): Promise<void> {
    clock.advance(DEFAULT_LEASE_MS + 1);
    expect(await other.runDue()).toBe(1);
    expect(await jobRow(id)).toMatchObject({ attempts, locked_until: GAVE_UP_LOCKED_UNTIL });
    expect((await jobRow(id))?.last_error).toMatch(/at most once/);
  }

  it('runs a due job once, with its parsed payload, and deletes it', async () => {
    const worker = newWorker();
    const seen: unknown[] = [];
    worker.register(Echo, async ({ signal, complete, finish, finishInOne, beginIrreversible, ...job }) => {
      await tick();
      expect(complete).toBeTypeOf('function');
      expect(finish).toBeTypeOf('function');
      expect(finishInOne).toBeTypeOf('function');
      expect(beginIrreversible).toBeTypeOf('function');
      expect(signal).toBeInstanceOf(AbortSignal);
      expect(signal.aborted).toBe(false);
      seen.push(job);
    });
    const id = await enqueue(Echo, { n: 7 }, -1000, { livemode: false, subjectId: 'in_abc' });
    expect(id).toMatch(/^job_[0-9A-Za-z]{22}$/);
    expect(await worker.runDue()).toBe(1);
    expect(seen).toEqual([
      {
        id,
        accountId,
        livemode: false,
        kind: Echo.kind,
        subjectId: 'in_abc',
        payload: { n: 7 },
        attempts: 0,
      },
    ]);
    expect(await jobRow(id)).toBeUndefined();
    expect(await worker.runDue()).toBe(0);
    expect(seen).toHaveLength(1);
  });

  it('leaves a job that is not yet due, and runs it once its time comes', async () => {
    const worker = newWorker();
    let runs = 0;
    worker.register(Echo, async () => {
      await tick();
      runs++;
    });
    const id = await enqueue(Echo, { n: 1 }, 60_000);
    expect(await worker.runDue()).toBe(0);
    expect(runs).toBe(0);
    expect(await jobRow(id)).toMatchObject({ attempts: 0, locked_until: null });
    clock.advance(59_999);
    expect(await worker.runDue()).toBe(0);
    clock.advance(1);
    expect(await worker.runDue()).toBe(1);
    expect(runs).toBe(1);
  });

  it('filters by account and mode, and leaves kinds it has no handler for to other workers', async () => {
    const worker = newWorker();
    const ran: number[] = [];
    worker.register(Echo, async (job) => {
      await tick();
      ran.push(job.payload.n);
    });
    await enqueue(Echo, { n: 1 }, 0, { livemode: true });
    await enqueue(Echo, { n: 2 }, 0, { livemode: false });
    const otherAccount = await enqueueJob(db.kysely, {
      accountId: 'acct_someone_else',
      livemode: false,
      kind: Echo,
      subjectId: 'x',
      payload: { n: 3 },
      dueAt: clock.now().getTime(),
    });
    const unhandled = await enqueue(Other, {});
    expect(await worker.runDue({ accountId, livemode: false })).toBe(1);
    expect(ran).toEqual([2]);
    expect(await worker.runDue({ accountId })).toBe(1);
    expect(ran).toEqual([2, 1]);
    expect(await worker.runDue()).toBe(1);
    expect(await jobRow(otherAccount)).toBeUndefined();
    expect(await jobRow(unhandled)).toMatchObject({ attempts: 0, locked_until: null });
  });

  it('claims past jobs given up on without reading them: the indexes its picks read hold none', async () => {
    const { worker, claims } = claimRecordingWorker();
    const ran: number[] = [];
    worker.register(Echo, async (job) => {
      ran.push(job.payload.n);
      await tick();
    });
    // Forty jobs given up on, older than the one due job, as a day of failed sends leaves them.
    for (let n = 0; n < 40; n++) await enqueue(Echo, { n }, -60_000 + n);
    await db.kysely.updateTable('jobs').set({ locked_until: GAVE_UP_LOCKED_UNTIL }).execute();
    await enqueue(Echo, { n: 100 });
    expect(await worker.runDue()).toBe(1);
    expect(ran).toEqual([100]);
    expect(claims).toHaveLength(1);
    const [claim] = claims;
    if (!claim) throw new Error('no claim');
    // The pick reads (kind, due_at) as the partial index of jobs not given up on: the planner takes a
    // partial index only for a query that states its condition.
    let steps: string[];
    if (database === 'sqlite') {
      const definition = await db.kysely.executeQuery<{ sql: string }>(
        CompiledQuery.raw("select sql from sqlite_master where name = 'jobs_kind_due_id'"),
      );
      expect(definition.rows[0]?.sql).toMatch(
        /where \(locked_until is null or locked_until < 8640000000000000\)/i,
      );
      steps = await planOf(db.kysely, database, { sql: claim.sql, values: claim.parameters });
      expect(steps.filter((step) => /^SCAN (jobs|[jyz])\b/.test(step))).toEqual([]);
    } else {
      const definition = await db.kysely.executeQuery<{ indexdef: string }>(
        CompiledQuery.raw(
          "select indexdef from pg_indexes where indexname = 'jobs_kind_due_id' and schemaname = current_schema()",
        ),
      );
      expect(definition.rows[0]?.indexdef).toMatch(
        /WHERE \(\(locked_until IS NULL\) OR \(locked_until < '?8640000000000000'?/,
      );
      // Planned as a repeated statement is (generic: the parameters' values unknown), where only the
      // condition written out proves the index's.
      steps = await planOf(db.kysely, database, { sql: claim.sql, values: claim.parameters });
    }
    expect(steps.some((step) => step.includes('jobs_kind_due_id'))).toBe(true);
  });

  it('validates payloads on enqueue, and cancels a subject’s jobs (optionally of one kind)', async () => {
    await expect(enqueue(Echo, { n: 'seven' })).rejects.toThrow(
      /Invalid payload for job kind "test_worker.echo"/,
    );
    await expect(enqueue('test_worker.nothing', {})).rejects.toThrow(/No job kind/);
    await expect(
      enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: Keyed,
        subjectId: 'in_one',
        payload: { n: 1 },
        dueAt: clock.now().getTime(),
        concurrencyKey: '',
      }),
    ).rejects.toThrow(/concurrencyKey must not be empty/);
    await enqueue(Echo, { n: 1 }, 0, { subjectId: 'in_one' });
    await enqueue(Other, {}, 0, { subjectId: 'in_one' });
    const kept = await enqueue(Echo, { n: 2 }, 0, { subjectId: 'in_two' });
    expect(await cancelJobs(db.kysely, { subjectId: 'in_one', kind: Other })).toBe(1);
    expect(await cancelJobs(db.kysely, { subjectId: 'in_one' })).toBe(1);
    expect(await cancelJobs(db.kysely, { subjectId: 'in_one' })).toBe(0);
    expect(await jobCount()).toBe(1);
    expect(await jobRow(kept)).toBeDefined();
  });

  it('enqueues a job with a unique key once while it is pending, and again once it has run', async () => {
    const worker = newWorker();
    const ran: number[] = [];
    worker.register(Echo, async (job) => {
      await tick();
      ran.push(job.payload.n);
    });
    const keyed = (n: number, on: Kysely<Database> = db.kysely) =>
      enqueueJob(on, {
        accountId,
        livemode: true,
        kind: Echo,
        subjectId: 'in_keyed',
        payload: { n },
        dueAt: clock.now().getTime(),
        uniqueKey: 'test_worker.echo:in_keyed',
      });
    const first = await keyed(1);
    // In a transaction too (the outbox's way), on the same key: nothing added, the pending job's id.
    expect(await db.kysely.transaction().execute((trx) => keyed(2, trx))).toBe(first);
    expect(await keyed(3)).toBe(first);
    // Jobs without a key are not constrained.
    await enqueue(Echo, { n: 4 });
    await enqueue(Echo, { n: 5 });
    expect(await jobCount()).toBe(3);
    expect(await worker.runDue()).toBe(3);
    expect(ran.sort()).toEqual([1, 4, 5]);
    const again = await keyed(6);
    expect(again).not.toBe(first);
    expect(await worker.runDue()).toBe(1);
    expect(ran).toContain(6);
  });

  it('frees a unique key when its job is given up, so later work of that key is queued again', async () => {
    const worker = newWorker();
    worker.register(Once, async () => {
      await tick();
      throw new Error('the relay refused');
    });
    const keyed = (n: number) =>
      enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: Once,
        subjectId: 'in_keyed',
        payload: { n },
        dueAt: clock.now().getTime(),
        uniqueKey: 'test_worker.once:in_keyed',
      });
    const first = await keyed(1);
    expect(await worker.runDue()).toBe(1);
    expect(await jobRow(first)).toMatchObject({ locked_until: GAVE_UP_LOCKED_UNTIL, unique_key: null });
    const next = await keyed(2);
    expect(next).not.toBe(first);
    expect(await jobRow(next)).toMatchObject({ locked_until: null, unique_key: 'test_worker.once:in_keyed' });
  });

  it('retries a failing job with backoff, records attempts and the error, and gives up after the last attempt', async () => {
    const logger = recordingLogger();
    const worker = newWorker(db, logger);
    const attemptsSeen: number[] = [];
    worker.register(Echo, async (job) => {
      await tick();
      attemptsSeen.push(job.attempts);
      throw new Error(`boom ${job.attempts}`);
    });
    const id = await enqueue(Echo, { n: 1 });

    expect(await worker.runDue()).toBe(1);
    let row = await jobRow(id);
    expect(row).toMatchObject({ attempts: 1, locked_until: null, due_at: clock.now().getTime() + 60_000 });
    expect(row?.last_error).toContain('boom 0');
    expect(await worker.runDue()).toBe(0);

    for (let failed = 1; failed < MAX_ATTEMPTS; failed++) {
      const delay = RETRY_DELAYS_MS[failed - 1] ?? 0;
      clock.advance(delay - 1);
      expect(await worker.runDue(), `not due 1 ms before retry ${failed}`).toBe(0);
      clock.advance(1);
      expect(await worker.runDue()).toBe(1);
      row = await jobRow(id);
      expect(row?.attempts).toBe(failed + 1);
      expect(row?.last_error).toContain(`boom ${failed}`);
    }
    expect(RETRY_DELAYS_MS.slice(0, 5)).toEqual([60_000, 300_000, 1_500_000, 7_200_000, 43_200_000]);
    expect(attemptsSeen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Given up: the row stays, for inspection, locked for good; an error is logged.
    expect(row).toMatchObject({ attempts: MAX_ATTEMPTS, locked_until: GAVE_UP_LOCKED_UNTIL });
    expect(
      logger.lines.some((l) => l.level === 'error' && /given up after 8 attempts/.test(l.msg ?? '')),
    ).toBe(true);
    clock.advance(365 * 86_400_000);
    expect(await worker.runDue()).toBe(0);
    expect(attemptsSeen).toHaveLength(8);
  });

  it('runs an at-most-once job once: not retried after a failure, not run again after its worker died', async () => {
    const logger = recordingLogger();
    const runs: string[] = [];
    let releaseHung: () => void = () => {};
    let hungStarted = false;
    const a = newWorker(dbs.a, logger);
    a.register(Once, async (job) => {
      runs.push(`a:${job.payload.n}`);
      if (job.payload.n === 1) throw new Error('the relay refused');
      hungStarted = true;
      await new Promise<void>((resolve) => (releaseHung = resolve));
    });
    const b = newWorker(dbs.b, logger);
    b.register(Once, async (job) => {
      await tick();
      runs.push(`b:${job.payload.n}`);
    });

    // 1. A failure is final.
    const failed = await enqueue(Once, { n: 1 });
    expect(await a.runDue()).toBe(1);
    expect(await jobRow(failed)).toMatchObject({ attempts: 1, locked_until: GAVE_UP_LOCKED_UNTIL });
    clock.advance(3_600_000);
    expect(await b.runDue()).toBe(0);

    // 2. A's worker hangs mid-send (as if dead); once its lease ran out B takes the job over but does not run it.
    const hung = await enqueue(Once, { n: 2 });
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    await expectTakenOverUnrun(b, hung, 2);
    releaseHung();
    await aRun;
    expect(runs).toEqual(['a:1', 'a:2']);
    expect(
      logger.lines.some((l) => l.level === 'error' && /given up after 1 attempt$/.test(l.msg ?? '')),
    ).toBe(true);
  });

  it('retries an at-most-once run that failed before its send; gives up one that failed after, or whose retry died', async () => {
    const logger = recordingLogger();
    const sent: number[] = [];
    const runs: number[] = [];
    let releaseHung: () => void = () => {};
    let hungStarted = false;
    const a = newWorker(dbs.a, logger);
    a.register(OnceMarked, async (job) => {
      runs.push(job.payload.n);
      const first = job.attempts === 0;
      // n 1 and 2 fail while reading on their first run; n 3 fails once its send has begun.
      if (first && job.payload.n !== 3) throw new Error('connection reset while reading');
      job.beginIrreversible();
      sent.push(job.payload.n);
      if (job.payload.n === 3) throw new Error('the relay hung up mid-send');
      if (job.payload.n === 2) {
        // Its retry's worker hangs mid-send, as if dead.
        hungStarted = true;
        await new Promise<void>((resolve) => (releaseHung = resolve));
      }
    });
    const b = newWorker(dbs.b, logger);
    b.register(OnceMarked, (job) => {
      job.beginIrreversible();
      sent.push(job.payload.n);
      return Promise.resolve();
    });

    const retried = await enqueue(OnceMarked, { n: 1 });
    expect(await a.runDue()).toBe(1);
    // Failed before its send: due again after the backoff, its attempt counted as unsent.
    expect(await jobRow(retried)).toMatchObject({
      attempts: 1,
      unsent_attempts: 1,
      locked_until: null,
      due_at: clock.now().getTime() + 60_000,
    });
    expect((await jobRow(retried))?.last_error).toContain('connection reset while reading');
    clock.advance(1);
    const retryDied = await enqueue(OnceMarked, { n: 2 });
    const failedMidSend = await enqueue(OnceMarked, { n: 3 });
    expect(await a.runDue()).toBe(2);
    expect(await jobRow(retryDied)).toMatchObject({ attempts: 1, unsent_attempts: 1, locked_until: null });
    // Failed after its send began: given up, as before.
    expect(await jobRow(failedMidSend)).toMatchObject({
      attempts: 1,
      unsent_attempts: 0,
      locked_until: GAVE_UP_LOCKED_UNTIL,
    });
    expect(sent).toEqual([3]);

    // After the backoff: n 1 runs whole and is sent once; then n 2's worker hangs mid-send.
    clock.advance(59_999);
    expect(await a.runDue()).toBe(1);
    expect(await jobRow(retried)).toBeUndefined();
    clock.advance(1);
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    // Once the hung run's lease ran out, B takes the job over but does not run it: that run may have sent.
    await expectTakenOverUnrun(b, retryDied, 3);
    releaseHung();
    await aRun;
    expect(sent).toEqual([3, 1, 2]);
    expect(runs.sort()).toEqual([1, 1, 2, 2, 3]);
  });

  it('gives up an at-most-once run that fails before its send on every attempt, after the last', async () => {
    const worker = newWorker();
    let runs = 0;
    worker.register(OnceMarked, async () => {
      runs++;
      await tick();
      throw new Error('the database is down');
    });
    const id = await enqueue(OnceMarked, { n: 1 });
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect(await worker.runDue()).toBe(1);
      clock.advance(RETRY_DELAYS_MS[attempt - 1] ?? 0);
    }
    expect(runs).toBe(MAX_ATTEMPTS);
    expect(await jobRow(id)).toMatchObject({ attempts: MAX_ATTEMPTS, locked_until: GAVE_UP_LOCKED_UNTIL });
    expect(await worker.runDue()).toBe(0);
  });

  it("records what giving up means through the kind's hook, in the give-up transaction", async () => {
    const a = newWorker();
    let hungStarted = false;
    let releaseHung: () => void = () => {};
    a.register(Once, async () => {
      hungStarted = true;
      await new Promise<void>((resolve) => (releaseHung = resolve));
    });
    const given: { subjectId: string; payload: { n: number }; attempts: number }[] = [];
    let refuse = true;
    const b = newWorker(dbs.b);
    b.register(Once, async () => {}, {
      onGiveUp: async (job, trx) => {
        given.push({ subjectId: job.subjectId, payload: job.payload, attempts: job.attempts });
        // Written in the give-up transaction: it commits with the give-up, or neither does.
        await enqueueJob(trx, {
          accountId,
          livemode: true,
          kind: Other,
          subjectId: `gave_up/${job.id}`,
          payload: {},
          dueAt: clock.now().getTime() + 3_600_000,
        });
        if (refuse) throw new Error('the hook failed');
      },
    });
    const hung = await enqueue(Once, { n: 5 }, 0, { subjectId: 'msg_hung' });
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    clock.advance(DEFAULT_LEASE_MS + 1);
    // A failing hook rolls the give-up back: the job stays claimed, and nothing the hook wrote remains.
    expect(await b.runDue()).toBe(1);
    expect((await jobRow(hung))?.locked_until).not.toBe(GAVE_UP_LOCKED_UNTIL);
    expect(await cancelJobs(db.kysely, { subjectId: `gave_up/${hung}` })).toBe(0);
    // Its lease runs out; the next give-up succeeds with its hook.
    refuse = false;
    clock.advance(DEFAULT_LEASE_MS + 1);
    expect(await b.runDue()).toBe(1);
    expect(await jobRow(hung)).toMatchObject({ attempts: 3, locked_until: GAVE_UP_LOCKED_UNTIL });
    expect(given).toEqual([
      { subjectId: 'msg_hung', payload: { n: 5 }, attempts: 2 },
      { subjectId: 'msg_hung', payload: { n: 5 }, attempts: 3 },
    ]);
    expect(await cancelJobs(db.kysely, { subjectId: `gave_up/${hung}` })).toBe(1);
    releaseHung();
    await aRun;
  });

  it('runNow runs given jobs whether due or not, and waits for one this worker runs already', async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ran: number[] = [];
    worker.register(Echo, async (job) => {
      if (job.payload.n === 2) await gate;
      ran.push(job.payload.n);
    });
    const later = await enqueue(Echo, { n: 1 }, 3_600_000);
    expect(await worker.runNow([later])).toBe(1);
    expect(ran).toEqual([1]);
    expect(await jobRow(later)).toBeUndefined();
    // Gone (it ran): nothing to do.
    expect(await worker.runNow([later])).toBe(0);

    const due = await enqueue(Echo, { n: 2 });
    worker.start();
    try {
      await waitFor(async () => (await jobRow(due))?.locked_until !== null);
      let answered = false;
      const asked = worker.runNow([due]).then((n) => {
        answered = true;
        return n;
      });
      await sleep(50);
      // The poll loop runs it: runNow waits for that run instead of answering before it ends.
      expect(answered).toBe(false);
      release();
      expect(await asked).toBe(0);
      expect(ran).toEqual([1, 2]);
    } finally {
      release();
      await worker.stop();
    }
  });

  it("whenSettled waits for the account's jobs that this worker's poll loop holds", async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    worker.register(Echo, async () => {
      await gate;
      finished = true;
    });
    const scope = { accountId, livemode: true };
    expect(await worker.whenSettled(scope)).toBe(0);
    const id = await enqueue(Echo, { n: 1 });
    worker.start();
    try {
      await waitFor(async () => (await jobRow(id))?.locked_until !== null);
      const settled = worker.whenSettled(scope);
      // Another account's view sees nothing to wait for.
      expect(await worker.whenSettled({ accountId: 'acct_other', livemode: true })).toBe(0);
      await sleep(30);
      expect(finished).toBe(false);
      release();
      expect(await settled).toBe(1);
      expect(finished).toBe(true);
    } finally {
      release();
      await worker.stop();
    }
  });

  it('counts an invalid stored payload as a failed attempt', async () => {
    const worker = newWorker();
    worker.register(Echo, async () => {});
    const id = await enqueue(Echo, { n: 1 });
    await db.kysely.updateTable('jobs').set({ payload: '{"n":"x"}' }).where('id', '=', id).execute();
    expect(await worker.runDue()).toBe(1);
    expect((await jobRow(id))?.last_error).toContain('invalid payload');
  });

  it('two workers on two connections run each of 200 due jobs exactly once', async () => {
    const runs = new Map<string, number>();
    const byWorker = { a: 0, b: 0 };
    const make = (on: Db, name: 'a' | 'b') => {
      const worker = newWorker(on, recordingLogger(), 7);
      worker.register(Echo, async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        byWorker[name]++;
        await sleep(job.payload.n % 3);
      });
      return worker;
    };
    const a = make(dbs.a, 'a');
    const b = make(dbs.b, 'b');
    const ids: string[] = [];
    for (let n = 0; n < 200; n++) ids.push(await enqueue(Echo, { n }, -n));

    a.start();
    b.start();
    try {
      await waitFor(async () => runs.size === 200 && (await jobCount()) === 0, 30_000);
      // A moment more, so a double run (if claiming were wrong) would show.
      await sleep(50);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    expect(byWorker.a + byWorker.b).toBe(200);
    expect(byWorker.a).toBeGreaterThan(0);
    expect(byWorker.b).toBeGreaterThan(0);
  });

  it("moves a killed worker's claimed backlog to another worker 30 seconds after its last renewal", async () => {
    // A claims a backlog (webhook attempts to one endpoint) and dies in the first one: no renewal, no release.
    let releaseHung: () => void = () => {};
    let hungStarted = false;
    const a = newWorker(dbs.a);
    a.register(Keyed, () => {
      hungStarted = true;
      return new Promise<void>((resolve) => (releaseHung = resolve));
    });
    const ran: number[] = [];
    const b = newWorker(dbs.b);
    b.register(Keyed, async (job) => {
      await tick();
      ran.push(job.payload.n);
    });
    for (let n = 0; n < 6; n++) await enqueue(Keyed, { n });
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    clock.advance(29_000);
    expect(await b.runDue(), 'claims still valid').toBe(0);
    clock.advance(1_001);
    expect(await b.runDue()).toBe(6);
    expect(ran.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    releaseHung();
    await aRun;
    expect(await jobCount()).toBe(0);
  });

  it('lets another worker take a job whose worker hung (lease expired); the late finisher changes nothing', async () => {
    let releaseHung: () => void = () => {};
    let hungStarted = false;
    const logA = recordingLogger();
    const a = newWorker(dbs.a, logA);
    a.register(Echo, () => {
      hungStarted = true;
      return new Promise<void>((resolve) => {
        releaseHung = resolve;
      });
    });
    const bRuns: number[] = [];
    const b = newWorker(dbs.b);
    b.register(Echo, async (job) => {
      await tick();
      bRuns.push(job.attempts);
      if (job.payload.n === 2) throw new Error('fails after takeover');
    });

    // 1. The job B completes after A's lease expired.
    const id = await enqueue(Echo, { n: 1 });
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    expect(await b.runDue()).toBe(0);
    clock.advance(DEFAULT_LEASE_MS - 1);
    expect(await b.runDue(), 'lease still valid').toBe(0);
    clock.advance(2);
    expect(await b.runDue()).toBe(1);
    expect(bRuns).toEqual([1]);
    expect(await jobRow(id)).toBeUndefined();
    releaseHung();
    expect(await aRun).toBe(1);
    expect(logA.lines.some((l) => l.level === 'warn' && /lease lost/.test(l.msg ?? ''))).toBe(true);

    // 2. The job B fails after the takeover: A's late success must not delete B's rescheduled row.
    hungStarted = false;
    const id2 = await enqueue(Echo, { n: 2 });
    const aRun2 = a.runDue();
    await waitFor(() => hungStarted);
    clock.advance(DEFAULT_LEASE_MS + 1);
    expect(await b.runDue()).toBe(1);
    releaseHung();
    expect(await aRun2).toBe(1);
    const row = await jobRow(id2);
    expect(row).toMatchObject({ attempts: 2, locked_until: null });
    expect(row?.last_error).toContain('fails after takeover');
  });

  it("ends a job in the handler's own transaction (Job.complete), fenced by the lease", async () => {
    const logA = recordingLogger();
    const a = newWorker(dbs.a, logA);
    let releaseHung: () => void = () => {};
    let hungStarted = false;
    let completeError: unknown;
    a.register(Echo, async (job) => {
      if (job.payload.n === 2) {
        hungStarted = true;
        await new Promise<void>((resolve) => (releaseHung = resolve));
      }
      // The outcome (here: a follow-up job) and the end of this job commit together, or neither.
      try {
        await dbs.a.kysely.transaction().execute(async (trx) => {
          await job.complete(trx);
          await followUp(trx, `after_${job.payload.n}`);
        });
      } catch (error) {
        completeError = error;
        throw error;
      }
    });
    const followUps = async (subject: string) =>
      (await db.kysely.selectFrom('jobs').select('id').where('subject_id', '=', subject).execute()).length;

    // 1. Held: the job ends with its outcome; the worker does not settle it again.
    const id = await enqueue(Echo, { n: 1 });
    expect(await a.runDue()).toBe(1);
    expect(await jobRow(id)).toBeUndefined();
    expect(await followUps('after_1')).toBe(1);
    expect(logA.lines.filter((l) => l.level !== 'info')).toEqual([]);

    // 2. Taken over meanwhile: complete() throws, the transaction records nothing.
    const b = newWorker(dbs.b);
    b.register(Echo, async () => {
      await tick();
    });
    const id2 = await enqueue(Echo, { n: 2 });
    const aRun = a.runDue();
    await waitFor(() => hungStarted);
    clock.advance(DEFAULT_LEASE_MS + 1);
    expect(await b.runDue()).toBe(1);
    releaseHung();
    await aRun;
    expect(completeError).toBeInstanceOf(JobLeaseLostError);
    expect(await followUps('after_2')).toBe(0);
    expect(await jobRow(id2)).toBeUndefined();
  });

  it('ends jobs finishing at the same moment with their outcomes in one commit (Job.finish)', async () => {
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 4 });
    const failures: unknown[] = [];
    worker.register(Echo, async (job) => {
      await tick();
      await job
        .finish(async (trx) => {
          await followUp(trx, `after_${job.payload.n}`);
          // The third outcome fails after its first statement: only it is rolled back.
          if (job.payload.n === 3) throw new Error('the outcome of job 3 cannot be recorded');
        })
        .catch((error: unknown) => {
          failures.push(error);
          throw error;
        });
    });
    const ids: string[] = [];
    for (let n = 1; n <= 4; n++) ids.push(await enqueue(Echo, { n }));
    worker.start();
    await waitFor(async () => failures.length === 1 && (await jobRow(ids[0] ?? ''))?.id === undefined);
    await waitFor(async () => (await jobRow(ids[2] ?? ''))?.locked_until === null);
    await worker.stop();

    const followUps = await db.kysely
      .selectFrom('jobs')
      .select('subject_id')
      .where('kind', '=', Other.kind)
      .orderBy('subject_id')
      .execute();
    expect(followUps.map((row) => row.subject_id)).toEqual(['after_1', 'after_2', 'after_4']);
    for (const n of [1, 2, 4]) expect(await jobRow(ids[n - 1] ?? '')).toBeUndefined();
    // The failed one is still there, to be retried, with its error; nothing of its outcome is.
    expect(await jobRow(ids[2] ?? '')).toMatchObject({ attempts: 1, locked_until: null });
    expect((await jobRow(ids[2] ?? ''))?.last_error).toContain('cannot be recorded');
    expect(failures).toHaveLength(1);
    // SQLite: four outcomes handed in together are tried as one transaction, which job 3 rolled back;
    // then each alone. PostgreSQL: each alone from the start. Three commits for three outcomes.
    expect(worker.outcomeCommits()).toEqual({ commits: 3, works: 3 });
  });

  it('records outcomes that arrive together in one commit on SQLite, side by side on PostgreSQL', async () => {
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 4 });
    const handedIn: number[] = [];
    const recorded: number[] = [];
    worker.register(Echo, async (job) => {
      await tick();
      handedIn.push(job.payload.n);
      await job.finish(() => {
        recorded.push(job.payload.n);
        return Promise.resolve();
      });
    });
    for (let n = 1; n <= 4; n++) await enqueue(Echo, { n });
    worker.start();
    await waitFor(async () => (await jobCount()) === 0);
    await worker.stop();
    expect([...handedIn].sort()).toEqual([1, 2, 3, 4]);
    expect([...recorded].sort()).toEqual([1, 2, 3, 4]);
    if (database === 'sqlite') {
      // In one transaction, in the order they were handed in.
      expect(recorded).toEqual(handedIn);
      expect(worker.outcomeCommits()).toEqual({ commits: 1, works: 4 });
    } else {
      expect(worker.outcomeCommits()).toEqual({ commits: 4, works: 4 });
    }
  });

  it('on SQLite, waits for the outcomes of handlers still running and records them in one commit', async () => {
    // A wait of a minute: the commit can come within the test's time only once no handler is left
    // running, which is what ends the wait.
    const worker = new Worker({
      db,
      clock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      concurrency: 4,
      outcomeGatherMs: 60_000,
    });
    const gates = new Map<number, () => void>();
    const handedIn: number[] = [];
    worker.register(Echo, async (job) => {
      await new Promise<void>((resolve) => gates.set(job.payload.n, resolve));
      handedIn.push(job.payload.n);
      await job.finish(() => Promise.resolve());
    });
    for (let n = 1; n <= 4; n++) await enqueue(Echo, { n });
    worker.start();
    try {
      await waitFor(() => gates.size === 4);
      // The handlers end one per turn of the event loop, as replies to requests in flight do.
      for (let n = 1; n <= 4; n++) {
        gates.get(n)?.();
        await new Promise((resolve) => setImmediate(resolve));
      }
      // The worker counts a commit once the database has answered it, which on PostgreSQL can come after
      // another connection already sees the jobs gone: wait for the count, then for the rows.
      await waitFor(() => worker.outcomeCommits().works === 4);
      await waitFor(async () => (await jobCount()) === 0);
      expect(handedIn).toEqual([1, 2, 3, 4]);
      expect(worker.outcomeCommits()).toEqual(
        database === 'sqlite' ? { commits: 1, works: 4 } : { commits: 4, works: 4 },
      );
    } finally {
      // Stopped even when an expectation fails: left running, it would take the next tests' jobs.
      for (const open of gates.values()) open();
      await worker.stop();
    }

    // With no other handler running, an outcome is recorded at once.
    const alone = new Worker({
      db,
      clock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      outcomeGatherMs: 60_000,
    });
    alone.register(Echo, async (job) => {
      await tick();
      await job.finish(() => Promise.resolve());
    });
    await enqueue(Echo, { n: 5 });
    expect(await alone.runDue()).toBe(1);
    expect(alone.outcomeCommits()).toEqual({ commits: 1, works: 1 });
  });

  it("ends a job with the handler's own fenced statement (Job.finishInOne), or throws when it lost the job", async () => {
    const logger = recordingLogger();
    const worker = newWorker(db, logger);
    const outcomes: unknown[] = [];
    worker.register(Echo, async (job) => {
      // Job 2 is cancelled before it ends: its statement deletes nothing.
      if (job.payload.n === 2) await cancelJobs(db.kysely, { subjectId: 'in_two', kind: Echo });
      const value = await job
        .finishInOne(async (fence) => {
          const deleted = await db.kysely
            .deleteFrom('jobs')
            .where('id', '=', fence.id)
            .where('locked_until', 'in', [...fence.leases])
            .executeTakeFirst();
          return { ended: deleted.numDeletedRows > 0n, value: `ended ${job.payload.n}` };
        })
        .catch((error: unknown) => error);
      outcomes.push(value);
    });
    const ids = [
      await enqueue(Echo, { n: 1 }, -2, { subjectId: 'in_one' }),
      await enqueue(Echo, { n: 2 }, -1, { subjectId: 'in_two' }),
    ];
    expect(await worker.runDue()).toBe(2);
    expect(outcomes[0]).toBe('ended 1');
    expect(outcomes[1]).toBeInstanceOf(JobLeaseLostError);
    expect(await jobCount()).toBe(0);
    // The engine took the first job as ended by the handler (no second delete, so no "lease lost"
    // warning for it); the cancelled one is warned about once.
    const warnings = logger.lines.filter((line) => line.level !== 'info');
    expect(warnings.map((line) => (line.obj as { job_id?: string }).job_id)).toEqual([ids[1]]);
  });

  it('renews no lease once an outcome is handed over: a slow outcome keeps the fence it was given', async () => {
    const leaseMs = 300;
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, leaseMs });
    const outcomes: unknown[] = [];
    worker.register(Echo, async (job) => {
      // Time has moved since the claim: a heartbeat now (every 100 ms) would write a new lease.
      clock.advance(50);
      const value = await job
        .finishInOne(async (fence) => {
          // The outcome's statement reaches the database a few heartbeats later (a slow round trip).
          await sleep(350);
          const deleted = await db.kysely
            .deleteFrom('jobs')
            .where('id', '=', fence.id)
            .where('locked_until', 'in', [...fence.leases])
            .executeTakeFirst();
          return { ended: deleted.numDeletedRows > 0n, value: 'recorded' };
        })
        .catch((error: unknown) => error);
      outcomes.push(value);
    });
    await enqueue(Echo, { n: 1 });
    worker.start();
    try {
      await waitFor(() => outcomes.length === 1);
    } finally {
      await worker.stop();
    }
    expect(outcomes).toEqual(['recorded']);
    expect(await jobCount()).toBe(0);
  });

  it('refuses a finish whose job was cancelled meanwhile: JobLeaseLostError, nothing recorded', async () => {
    const worker = newWorker();
    let finishError: unknown;
    worker.register(Echo, async (job) => {
      await cancelJobs(db.kysely, { subjectId: 'in_subject', kind: Echo });
      await job
        .finish((trx) => followUp(trx, 'after_cancelled'))
        .catch((error: unknown) => {
          finishError = error;
        });
    });
    await enqueue(Echo, { n: 1 });
    expect(await worker.runDue()).toBe(1);
    expect(finishError).toBeInstanceOf(JobLeaseLostError);
    expect(await jobCount()).toBe(0);
  });

  it('runs up to `concurrency` jobs at once: a job that waits holds one slot, not the worker', async () => {
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 2 });
    let releaseSlow: () => void = () => {};
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const done: number[] = [];
    let running = 0;
    let mostAtOnce = 0;
    worker.register(Echo, async (job) => {
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      // Job 0 waits (a mail relay that does not answer); the others take a few milliseconds.
      await (job.payload.n === 0 ? slowGate : sleep(3));
      running--;
      done.push(job.payload.n);
    });
    await enqueue(Echo, { n: 0 }, -100);
    for (let n = 1; n <= 8; n++) await enqueue(Echo, { n }, -n);

    worker.start();
    try {
      await waitFor(() => done.length === 8);
      expect(done).not.toContain(0);
      expect(mostAtOnce).toBe(2);
      releaseSlow();
      await waitFor(async () => done.length === 9 && (await jobCount()) === 0);
    } finally {
      releaseSlow();
      await worker.stop();
    }
    expect(done.slice(-1)).toEqual([0]);
  });

  it("gives each kind its own slots: a slow kind's jobs cannot hold every slot", async () => {
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 2 });
    let releaseSlow: () => void = () => {};
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    let slowRunning = 0;
    let slowMostAtOnce = 0;
    const done: string[] = [];
    worker.register(Slow, async (job) => {
      slowRunning++;
      slowMostAtOnce = Math.max(slowMostAtOnce, slowRunning);
      await slowGate;
      slowRunning--;
      done.push(`slow:${job.payload.n}`);
    });
    worker.register(Echo, async (job) => {
      await sleep(2);
      done.push(`echo:${job.payload.n}`);
    });
    // The slow jobs are the oldest: without slots of their own they would take every slot first.
    for (let n = 0; n < 3; n++) await enqueue(Slow, { n }, -1000 + n);
    for (let n = 0; n < 6; n++) await enqueue(Echo, { n }, -n);

    worker.start();
    try {
      await waitFor(() => done.filter((d) => d.startsWith('echo')).length === 6);
      expect(done.filter((d) => d.startsWith('slow'))).toEqual([]);
      expect(slowMostAtOnce).toBe(1);
      releaseSlow();
      await waitFor(async () => done.length === 9 && (await jobCount()) === 0);
    } finally {
      releaseSlow();
      await worker.stop();
    }
    expect(slowMostAtOnce).toBe(1);
  });

  it("limits a kind's jobs per concurrency key: one hanging key holds two slots, the others run", async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let stuckRunning = 0;
    let stuckMostAtOnce = 0;
    const done: string[] = [];
    worker.register(Keyed, async (job) => {
      if (job.subjectId === 'stuck') {
        stuckRunning++;
        stuckMostAtOnce = Math.max(stuckMostAtOnce, stuckRunning);
        await gate;
        stuckRunning--;
      } else {
        await sleep(2);
      }
      done.push(`${job.subjectId}:${job.payload.n}`);
    });
    const add = (key: string, n: number, dueInMs: number) =>
      enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: Keyed,
        subjectId: key,
        payload: { n },
        dueAt: clock.now().getTime() + dueInMs,
        concurrencyKey: `endpoint_${key}`,
      });
    // The hanging key's jobs are the oldest.
    for (let n = 0; n < 10; n++) await add('stuck', n, -1000 + n);
    for (let n = 0; n < 6; n++) await add('ok', n, -n);
    const claimedStuck = async () =>
      (
        await db.kysely
          .selectFrom('jobs')
          .select('id')
          .where('subject_id', '=', 'stuck')
          .where('locked_until', 'is not', null)
          .execute()
      ).length;

    worker.start();
    try {
      await waitFor(() => done.filter((d) => d.startsWith('ok')).length === 6);
      expect(stuckMostAtOnce).toBe(2);
      // Two running and at most the prefetch waiting: the rest stay free for other workers.
      expect(await claimedStuck()).toBeLessThanOrEqual(4);
      release();
      await waitFor(async () => done.length === 16 && (await jobCount()) === 0);
    } finally {
      release();
      await worker.stop();
    }
    expect(stuckMostAtOnce).toBe(2);
  });

  it("claims the other keys' jobs, oldest key first, beside a key whose backlog fills the kind's front", async () => {
    // The claims made while the worker holds the busy key's allowance.
    let busyRunning = 0;
    const { worker, claims } = claimRecordingWorker(() => busyRunning > 0);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const done: string[] = [];
    worker.register(KeyedAhead, async (job) => {
      if (job.subjectId === 'busy') {
        busyRunning++;
        await gate;
      }
      done.push(`${job.subjectId}:${job.payload.n}`);
    });
    const add = (subjectId: string, n: number, dueInMs: number, key: string | null) =>
      enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: KeyedAhead,
        subjectId,
        payload: { n },
        dueAt: clock.now().getTime() + dueInMs,
        ...(key === null ? {} : { concurrencyKey: key }),
      });
    // Two hundred of one endpoint, all older than any other key's.
    for (let n = 0; n < 200; n++) await add('busy', n, -100_000 + n, 'endpoint_busy');
    for (let n = 0; n < 3; n++) await add('b', n, -500 + n, 'endpoint_b');
    for (let n = 0; n < 2; n++) await add('a', n, -400 + n, 'endpoint_a');
    await add('none', 0, -300, null);
    // Not due yet: left for later.
    await add('later', 0, 60_000, 'endpoint_later');
    const claimedOf = async (subjectId: string) =>
      (
        await db.kysely
          .selectFrom('jobs')
          .select('id')
          .where('subject_id', '=', subjectId)
          .where('locked_until', 'is not', null)
          .execute()
      ).length;

    worker.start();
    try {
      await waitFor(() => done.length === 6);
      expect(done.filter((d) => !d.startsWith('busy')).sort()).toEqual([
        'a:0',
        'a:1',
        'b:0',
        'b:1',
        'b:2',
        'none:0',
      ]);
      // One of the busy key at once (its keyConcurrency), five more claimed ahead: no more.
      expect(busyRunning).toBe(1);
      expect(await claimedOf('busy')).toBe(6);
      expect(await claimedOf('later')).toBe(0);
      expect(claims.length).toBeGreaterThan(0);
      if (database === 'sqlite') {
        // Each claim beside the busy key reads the other keys' jobs from the queue index, a seek per
        // key: none walks the kind's front, the busy key's 194 unclaimed jobs.
        for (const claim of claims) {
          const steps = await planOf(db.kysely, database, { sql: claim.sql, values: claim.parameters });
          expect(steps.some((step) => step.includes('jobs_queue_due_id'))).toBe(true);
          expect(steps.filter((step) => step.includes('jobs_kind_due_id'))).toEqual([]);
          // Nor reads the table whole (a subquery that does not state what a partial index holds).
          expect(steps.filter((step) => /^SCAN (jobs|[jyz])\b/.test(step))).toEqual([]);
        }
      }
      release();
      await waitFor(async () => (await jobCount()) === 1);
    } finally {
      release();
      await worker.stop();
    }
    expect(done.filter((d) => d.startsWith('busy'))).toHaveLength(200);
  });

  it("claims a busy key's jobs ahead by the kind's keyPrefetch, and still runs one of the key at once", async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    let mostAtOnce = 0;
    let done = 0;
    worker.register(KeyedAhead, async () => {
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      await gate;
      running--;
      done++;
    });
    for (let n = 0; n < 10; n++)
      await enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: KeyedAhead,
        subjectId: `busy_${n}`,
        payload: { n },
        dueAt: clock.now().getTime() - 100 + n,
        concurrencyKey: 'endpoint_busy',
      });
    const claimed = async () =>
      (await db.kysely.selectFrom('jobs').select('id').where('locked_until', 'is not', null).execute())
        .length;

    worker.start();
    try {
      await waitFor(() => running === 1);
      // One claim took the key's slot and five more; a few polls later, still only those.
      await sleep(100);
      expect(await claimed()).toBe(6);
      expect(running).toBe(1);
      release();
      await waitFor(async () => (await jobCount()) === 0);
    } finally {
      release();
      await worker.stop();
    }
    expect(done).toBe(10);
    expect(mostAtOnce).toBe(1);
  });

  it("claims again as a key's slots free only while the last claim filled a key's allowance", async () => {
    // No poll within the test's time: every claim after the first is a wake-up or a backlog's.
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 60_000 });
    const done: string[] = [];
    worker.register(KeyedAhead, async (job) => {
      await tick();
      done.push(job.subjectId);
    });
    const add = (subjectId: string, key: string, n: number) =>
      enqueueJob(db.kysely, {
        accountId,
        livemode: true,
        kind: KeyedAhead,
        subjectId,
        payload: { n },
        dueAt: clock.now().getTime() - 100 + n,
        concurrencyKey: key,
      });
    // A backlog of one key: each claim takes its allowance (one slot and five ahead) and the next
    // comes as soon as those have started, not at the next poll.
    for (let n = 0; n < 20; n++) await add(`busy_${n}`, 'endpoint_busy', n);
    worker.start();
    try {
      await waitFor(() => done.length === 20);
      // The last claim took two of six: nothing was left behind, and no claim followed.
      await sleep(100);
      const afterBacklog = worker.pollClaims();
      expect(afterBacklog).toBe(4);

      // One job woken for: claimed alone, and its end starts no claim of its own.
      await add('quiet_0', 'endpoint_quiet', 0);
      worker.nudge();
      await waitFor(() => done.length === 21);
      await sleep(100);
      expect(worker.pollClaims()).toBe(afterBacklog + 1);
    } finally {
      await worker.stop();
    }
  });

  it('renews at once the lease of a job that waited in the queue for a third of its lease', async () => {
    const leaseMs = 30_000;
    const worker = new Worker({
      db,
      clock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      leaseMs,
      prefetch: 1,
    });
    let releaseFirst: () => void = () => {};
    const first = new Promise<void>((resolve) => (releaseFirst = resolve));
    let releaseSecond: () => void = () => {};
    const second = new Promise<void>((resolve) => (releaseSecond = resolve));
    const started: number[] = [];
    worker.register(Slow, async (job) => {
      started.push(job.payload.n);
      await (job.payload.n === 0 ? first : second);
    });
    await enqueue(Slow, { n: 0 }, -2);
    const waiting = await enqueue(Slow, { n: 1 }, -1);
    worker.start();
    try {
      // Job 1 is claimed ahead with job 0 and waits for Slow's one slot.
      await waitFor(async () => started.length === 1 && (await jobRow(waiting))?.locked_until != null);
      const claimedUntil = Number((await jobRow(waiting))?.locked_until);
      // 12 of its 30 seconds pass before job 0 ends: job 1 starts with 18 s of lease left.
      clock.advance(12_000);
      releaseFirst();
      await waitFor(() => started.length === 2);
      // Renewed within a second, not at the heartbeat ten seconds later.
      await waitFor(async () => Number((await jobRow(waiting))?.locked_until) > claimedUntil, 1_000);
      expect(Number((await jobRow(waiting))?.locked_until)).toBe(clock.now().getTime() + leaseMs);
    } finally {
      releaseFirst();
      releaseSecond();
      await worker.stop();
    }
  });

  it("gives a job's slot to the next job once its outcome is handed over (Job.finish), not once recorded", async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    worker.register(Slow, async (job) => {
      seen.push(`start ${job.payload.n}`);
      if (job.payload.n !== 0) return;
      // The first job's outcome takes as long as the test holds the gate (a slow commit).
      await job.finish(async (trx) => {
        await followUp(trx, 'after_0');
        seen.push('recording 0');
        await gate;
      });
      seen.push('recorded 0');
    });
    await enqueue(Slow, { n: 0 }, -2);
    await enqueue(Slow, { n: 1 }, -1);

    worker.start();
    try {
      // Slow has one slot: the second job starts while the first one's outcome is still being recorded.
      await waitFor(() => seen.includes('start 1'));
      expect(seen).not.toContain('recorded 0');
      release();
      await waitFor(async () => (await jobCount()) === 1);
    } finally {
      release();
      await worker.stop();
    }
    // The slot was handed on as the outcome was handed in, before its transaction began.
    expect(seen).toEqual(['start 0', 'start 1', 'recording 0', 'recorded 0']);
    expect(
      (await db.kysely.selectFrom('jobs').select('subject_id').execute()).map((r) => r.subject_id),
    ).toEqual(['after_0']);
  });

  it('claims only for free slots plus the prefetch, not a whole batch while every slot is busy', async () => {
    const worker = new Worker({
      db,
      clock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      concurrency: 2,
      prefetch: 1,
      batchSize: 20,
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    worker.register(Echo, async () => {
      started++;
      await gate;
    });
    for (let n = 0; n < 10; n++) await enqueue(Echo, { n }, -n);
    const claimed = async () =>
      (await db.kysely.selectFrom('jobs').select('id').where('locked_until', 'is not', null).execute())
        .length;

    worker.start();
    try {
      await waitFor(() => started === 2);
      // A few polls more: a worker with both slots busy claims nothing beyond its one prefetched job.
      await sleep(100);
      expect(started).toBe(2);
      expect(await claimed()).toBe(3);
      release();
      await waitFor(async () => (await jobCount()) === 0);
    } finally {
      release();
      await worker.stop();
    }
    expect(started).toBe(10);
  });

  it('claims no prefetch for an at-most-once kind: a job it never started must not be given up unrun', async () => {
    const worker = newWorker();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    worker.register(OnceTwo, async () => {
      started++;
      await gate;
    });
    for (let n = 0; n < 6; n++) await enqueue(OnceTwo, { n }, -n);
    const claimed = async () =>
      (await db.kysely.selectFrom('jobs').select('id').where('locked_until', 'is not', null).execute())
        .length;
    worker.start();
    try {
      await waitFor(() => started === 2);
      await sleep(100);
      // Its two slots, nothing more (another kind of the same limit would hold two more).
      expect(await claimed()).toBe(2);
      release();
      await waitFor(async () => (await jobCount()) === 0);
    } finally {
      release();
      await worker.stop();
    }
    expect(started).toBe(6);
  });

  it('never runs a queued job whose lease ran out while it waited for a slot (another worker took it)', async () => {
    const a = new Worker({ db: dbs.a, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 1 });
    let releaseSlow: () => void = () => {};
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const runs: string[] = [];
    let slowStarted = false;
    a.register(Echo, async (job) => {
      if (job.payload.n === 0) {
        slowStarted = true;
        await slowGate;
      }
      runs.push(`a:${job.payload.n}`);
    });
    const b = newWorker(dbs.b);
    b.register(Echo, async (job) => {
      await tick();
      runs.push(`b:${job.payload.n}`);
    });
    await enqueue(Echo, { n: 0 }, -10);
    const queuedId = await enqueue(Echo, { n: 1 }, -1);

    a.start();
    try {
      // Job 1 is claimed with job 0 and waits in A's queue behind it, until its lease has run out.
      await waitFor(() => slowStarted);
      expect(await jobRow(queuedId)).toMatchObject({ attempts: 1 });
      // Both leases run out: B takes both jobs over (job 0's late finish in A is fenced off).
      clock.advance(DEFAULT_LEASE_MS + 1);
      expect(await b.runDue()).toBe(2);
      releaseSlow();
      await waitFor(async () => runs.includes('a:0') && (await jobCount()) === 0);
      await sleep(50);
    } finally {
      releaseSlow();
      await a.stop();
    }
    // A finishes job 0 late but never starts job 1, which B already ran.
    expect(runs.sort()).toEqual(['a:0', 'b:0', 'b:1']);
  });

  it('stop() hands back claimed jobs that had not started, attempt not counted', async () => {
    const worker = new Worker({ db, clock, logger: recordingLogger(), pollIntervalMs: 10, concurrency: 1 });
    let releaseSlow: () => void = () => {};
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    let slowStarted = false;
    const ran: number[] = [];
    worker.register(Echo, async (job) => {
      if (job.payload.n === 0) {
        slowStarted = true;
        await slowGate;
      }
      ran.push(job.payload.n);
    });
    await enqueue(Echo, { n: 0 }, -10);
    const queuedId = await enqueue(Echo, { n: 1 }, -1);

    worker.start();
    await waitFor(() => slowStarted);
    expect(await jobRow(queuedId)).toMatchObject({ attempts: 1 });
    const stopping = worker.stop();
    releaseSlow();
    await stopping;
    expect(ran).toEqual([0]);
    expect(await jobRow(queuedId)).toMatchObject({ attempts: 0, locked_until: null });
  });

  it("aborts a timed-out handler's signal, and counts the attempt as failed", async () => {
    const worker = newWorker();
    let abortedWith: unknown;
    let finishedAfterAbort = false;
    worker.register(Brief, async (job) => {
      await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve()));
      abortedWith = job.signal.reason;
      // A handler honouring the signal stops here; one that did not would go on acting.
      await tick();
      finishedAfterAbort = true;
    });
    const id = await enqueue(Brief, {});
    expect(await worker.runDue()).toBe(1);
    await waitFor(() => finishedAfterAbort);
    expect(abortedWith).toBeInstanceOf(Error);
    expect((abortedWith as Error).message).toMatch(/did not finish within 50 ms/);
    const row = await jobRow(id);
    expect(row).toMatchObject({ attempts: 1, locked_until: null });
    expect(row?.last_error).toMatch(/did not finish within 50 ms/);
  });

  it("stop() aborts a running handler's signal after the grace and hands its job back, attempt not counted", async () => {
    const worker = newWorker();
    let started = false;
    let aborted = false;
    worker.register(Echo, async (job) => {
      started = true;
      await new Promise<void>((resolve, reject) =>
        job.signal.addEventListener('abort', () => {
          aborted = true;
          reject(job.signal.reason as Error);
        }),
      );
    });
    const id = await enqueue(Echo, { n: 1 });
    worker.start();
    await waitFor(() => started);
    const before = Date.now();
    await worker.stop(100);
    expect(aborted).toBe(true);
    expect(Date.now() - before).toBeGreaterThanOrEqual(90);
    expect(await jobRow(id)).toMatchObject({ attempts: 0, locked_until: null, last_error: null });
  });

  it('stop() hands back an at-most-once run cut short before its send began, and gives up one cut short after', async () => {
    const worker = newWorker();
    const started: number[] = [];
    const sent: number[] = [];
    // n 1 is still reading when the shutdown comes; n 2 (another kind) and n 3 are mid-send.
    const cutShort = (job: { signal: AbortSignal }) =>
      new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve()));
    worker.register(OnceMarked, async (job) => {
      started.push(job.payload.n);
      if (job.payload.n === 1) await cutShort(job);
      job.beginIrreversible();
      sent.push(job.payload.n);
      await cutShort(job);
      throw new Error('the send was abandoned');
    });
    worker.register(Once, async (job) => {
      started.push(job.payload.n);
      // No mark: the whole run counts as the send.
      await cutShort(job);
      throw new Error('the send was abandoned');
    });
    const beforeSend = await enqueue(OnceMarked, { n: 1 });
    const unmarked = await enqueue(Once, { n: 2 });
    const midSend = await enqueue(OnceMarked, { n: 3 });
    worker.start();
    await waitFor(() => started.length === 3 && sent.length === 1);
    await worker.stop(50);
    expect(sent).toEqual([3]);
    expect(await jobRow(beforeSend)).toMatchObject({ attempts: 0, locked_until: null, last_error: null });
    expect(await jobRow(unmarked)).toMatchObject({ attempts: 1, locked_until: GAVE_UP_LOCKED_UNTIL });
    expect(await jobRow(midSend)).toMatchObject({ attempts: 1, locked_until: GAVE_UP_LOCKED_UNTIL });
    // The run handed back runs again, whole, on the next worker.
    const next = newWorker();
    const ran: number[] = [];
    next.register(OnceMarked, (job) => {
      job.beginIrreversible();
      ran.push(job.payload.n);
      return Promise.resolve();
    });
    next.register(Once, async () => {});
    expect(await next.runDue()).toBe(1);
    expect(ran).toEqual([1]);
    expect(await jobRow(beforeSend)).toBeUndefined();
  });

  it('refuses a kind that marks where its send begins without being at most once', () => {
    expect(() =>
      defineJob('test_worker.marked_only', z.strictObject({}), { testOnly: true, marksIrreversible: true }),
    ).toThrow(/marksIrreversible needs atMostOnce/);
  });

  it('renews the lease of a running job: a handler longer than the lease is not taken over', async () => {
    // Real time here: the lease must run out in real time for the other worker to see it.
    const leaseMs = 300;
    const a = new Worker({
      db: dbs.a,
      clock: systemClock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      leaseMs,
    });
    const b = new Worker({
      db: dbs.b,
      clock: systemClock,
      logger: recordingLogger(),
      pollIntervalMs: 10,
      leaseMs,
    });
    const runs: string[] = [];
    a.register(Long, async (job) => {
      runs.push('a');
      await sleep(job.payload.ms);
    });
    b.register(Long, async () => {
      await tick();
      runs.push('b');
    });
    const id = await enqueueJob(db.kysely, {
      accountId,
      livemode: true,
      kind: Long,
      subjectId: 'in_long',
      payload: { ms: 1_000 },
      dueAt: Date.now() - 1,
    });
    const aRun = a.runDue();
    await waitFor(() => runs.length === 1);
    // Over three leases long, B keeps trying.
    const until = Date.now() + 1_100;
    while (Date.now() < until) {
      await b.runDue();
      await sleep(25);
    }
    expect(await aRun).toBe(1);
    expect(runs).toEqual(['a']);
    expect(await jobRow(id)).toBeUndefined();
  });

  it('stop() waits for the job in flight', async () => {
    const worker = newWorker();
    let started = false;
    let finished = false;
    worker.register(Echo, async () => {
      started = true;
      await sleep(100);
      finished = true;
    });
    const id = await enqueue(Echo, { n: 1 });
    worker.start();
    await waitFor(() => started);
    await worker.stop();
    expect(finished).toBe(true);
    expect(await jobRow(id)).toBeUndefined();
  });

  it('assertHandlers throws on a missing or a duplicate handler', () => {
    const worker = newWorker();
    expect(() => worker.assertHandlers([Echo.kind])).toThrow(/"test_worker.echo" has no handler/);
    worker.register(Echo, async () => {});
    expect(() => worker.assertHandlers([Echo.kind])).not.toThrow();
    worker.register(Echo.kind, async () => {});
    expect(() => worker.assertHandlers([Echo.kind])).toThrow(/"test_worker.echo" has 2 handlers/);
    expect(() => worker.register('test_worker.undefined', async () => {})).toThrow(/not defined/);
  });
});
