import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openDatabase, type Db } from '../src/db/database.js';
import { defineJob, enqueueJob } from '../src/jobs/jobs.js';
import { Worker, type WorkerLogger } from '../src/jobs/worker.js';
import { DATABASES } from './helpers/env.js';
import { ManualClock } from './helpers/manual-clock.js';
import { eventually, sleep } from './helpers/receivers.js';
import { openTestDatabase } from './helpers/server.js';
import { holdPgStatements } from './helpers/statements.js';

const Step = defineJob('test_renewal.step', z.strictObject({ n: z.number().int() }), { testOnly: true });

const quiet: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} };

/** Waits until `condition` holds (polled). */
const waitFor = (condition: () => boolean, what: string) =>
  eventually(() => Promise.resolve(condition() || undefined), what);

/**
 * On PostgreSQL a worker renews its running jobs' leases by groups (one statement per lease they hold)
 * on one connection while an outcome is recorded on another. An outcome taken while an earlier group's
 * renewal is under way must hold whichever lease its row carries when its statement arrives: the
 * outcome of a job whose renewal came after its fence was taken was lost (its handler's work rolled
 * back, an at-most-once send recorded as cut off). SQLite runs both on its one connection, in turn.
 */
describe.runIf(DATABASES.includes('postgres'))(
  'lease renewals under way while an outcome is recorded, on PostgreSQL',
  () => {
    let opened: Awaited<ReturnType<typeof openTestDatabase>>;
    let db: Db;
    /** A second handle on the same schema, as another process would have. */
    let other: Db;

    beforeAll(async () => {
      opened = await openTestDatabase('postgres');
      db = opened.db;
      other = openDatabase({ databaseUrl: opened.env.DATABASE_URL, dataDir: opened.env.DATA_DIR ?? '' });
    });
    afterAll(async () => {
      await other.close();
      await opened.close();
    });

    it('keeps the outcome of a job whose lease is renewed after its fence was taken', async () => {
      const clock = new ManualClock(Date.UTC(2030, 0, 1));
      const leaseMs = 3_000;
      const worker = new Worker({
        db,
        clock,
        logger: quiet,
        pollIntervalMs: 10,
        concurrency: 4,
        leaseMs,
        jobTimeoutMs: 20_000,
      });
      const started = new Set<number>();
      const finishing = new Map<number, () => void>();
      const outcomes: unknown[] = [];
      worker.register(Step, async (job) => {
        started.add(job.payload.n);
        await new Promise<void>((resolve) => finishing.set(job.payload.n, resolve));
        try {
          outcomes.push(
            await job.finish(async (trx) => {
              await trx
                .insertInto('usage_counters')
                .values({
                  account_id: 'acct_renewal',
                  livemode: 1,
                  period: 'all',
                  metric: `step_${job.payload.n}`,
                  value: 1,
                })
                .execute();
              return 'recorded';
            }),
          );
        } catch (error) {
          outcomes.push(error);
        }
      });
      const enqueue = (n: number, dueInMs: number) =>
        enqueueJob(db.kysely, {
          accountId: 'acct_renewal',
          livemode: true,
          kind: Step,
          subjectId: `step_${n}`,
          payload: { n },
          dueAt: clock.now().getTime() + dueInMs,
        });

      // Two running jobs holding different leases: claimed one second apart.
      const first = await enqueue(1, 0);
      const second = await enqueue(2, 1_000);
      const runs = [worker.runDue()];
      await waitFor(() => started.has(1), 'the first job started');
      clock.advance(1_000);
      runs.push(worker.runDue());
      await waitFor(() => started.has(2), 'the second job started');

      // The first group's renewal waits on a row lock held elsewhere; the second job's outcome statement
      // is held back on its way (as a slow network would), after its fence was taken.
      let unlock: () => void = () => {};
      const unlocked = new Promise<void>((resolve) => (unlock = resolve));
      let locked = false;
      const holder = other.kysely.transaction().execute(async (trx) => {
        await trx.selectFrom('jobs').select('id').where('id', '=', first).forUpdate().execute();
        locked = true;
        await unlocked;
      });
      await waitFor(() => locked, 'the first job locked elsewhere');
      const outcome = holdPgStatements(
        (text, values) => /delete from "?jobs"?/i.test(text) && values.includes(second),
      );
      try {
        // Both leases now end within one lease from now: the next heartbeat (every second here) renews
        // them, and the first group's update waits on the lock.
        clock.advance(1_100);
        await sleep(1_300);
        finishing.get(2)?.();
        await waitFor(() => outcome.held() > 0, 'the outcome held back');
        // The first group's update goes through; the second group's follows, before the held outcome.
        unlock();
        await holder;
        await sleep(500);
      } finally {
        outcome.release();
        outcome.restore();
      }
      await waitFor(() => outcomes.length === 1, 'the second outcome');
      expect(outcomes).toEqual(['recorded']);
      finishing.get(1)?.();
      await Promise.all(runs);
      expect(outcomes).toEqual(['recorded', 'recorded']);
      const left = await db.kysely
        .selectFrom('jobs')
        .select('id')
        .where('id', 'in', [first, second])
        .execute();
      expect(left).toEqual([]);
      const counted = await db.kysely
        .selectFrom('usage_counters')
        .select('metric')
        .where('account_id', '=', 'acct_renewal')
        .orderBy('metric')
        .execute();
      expect(counted.map((row) => row.metric)).toEqual(['step_1', 'step_2']);
    });
  },
);
