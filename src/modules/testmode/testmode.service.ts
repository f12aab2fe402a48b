import type { Db } from '../../db/database.js';
import { assertTestMode, type AuthContext } from '../../http/auth.js';
import type { Clock } from '../../lib/clock.js';
import { bringTestJobsForward } from '../../jobs/jobs.js';
import type { Worker } from '../../jobs/worker.js';
import { WEBHOOK_ATTEMPT } from '../webhooks/webhooks.jobs.js';
import { auditInTransaction } from '../audit/audit.scope.js';

/** 10 years of 366 days: the largest single advance. */
export const MAX_ADVANCE_SECONDS = 10 * 366 * 86_400;

/** A guard against a job that keeps enqueueing due work for itself: past this, the rest stays queued. */
const MAX_JOBS_PER_ADVANCE = 10_000;

/**
 * Left to the poll loop, not run in the request: a webhook attempt may wait its whole 30-second
 * time-out on an endpoint that does not answer, and one such endpoint would hold the advance.
 */
const LEFT_TO_THE_WORKERS = [WEBHOOK_ATTEMPT];

export interface ClockAdvance {
  test_clock: string;
  advanced_seconds: number;
  jobs_run: number;
}

/**
 * Moves the account's test clock forward and runs what fell due. In one transaction the offset grows
 * and every test job of the account comes earlier by the same amount (due_at is real time), so the
 * jobs due by the new test time are due now in real time. Then the worker runs them (and the due work
 * they enqueue) before this returns; webhook attempts are due at once and left to the workers.
 */
export async function advanceTestClock(
  db: Db,
  worker: Worker,
  clock: Clock,
  auth: AuthContext,
  seconds: number,
): Promise<ClockAdvance> {
  assertTestMode(auth);
  const accountId = auth.account.id;
  const deltaMs = seconds * 1000;
  const offsetMs = await db.kysely.transaction().execute(async (trx) => {
    await trx
      .updateTable('accounts')
      .set((eb) => ({ test_clock_offset_ms: eb('test_clock_offset_ms', '+', deltaMs) }))
      .where('id', '=', accountId)
      .execute();
    await bringTestJobsForward(trx, accountId, deltaMs);
    const row = await trx
      .selectFrom('accounts')
      .select('test_clock_offset_ms')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    // Written here, before the due jobs run in this request: the entry is the advance's, not a job's.
    await auditInTransaction(trx);
    return Number(row.test_clock_offset_ms);
  });

  const jobsRun = await runDueTestJobs(worker, accountId);
  worker.nudge();
  return {
    test_clock: new Date(clock.now().getTime() + offsetMs).toISOString(),
    advanced_seconds: seconds,
    jobs_run: jobsRun,
  };
}

/**
 * Runs the account's due test jobs until none is left, the due work they enqueue included. A due job
 * this process's poll loop took first is waited for (its completion, not a poll), and what it
 * enqueued runs next; a job another process took is that process's.
 */
async function runDueTestJobs(worker: Worker, accountId: string): Promise<number> {
  const scope = { accountId, livemode: false, exceptKinds: LEFT_TO_THE_WORKERS };
  let total = 0;
  for (;;) {
    const ran = await worker.runDue(scope);
    total += ran;
    if (total >= MAX_JOBS_PER_ADVANCE) return total;
    if (ran > 0) continue;
    // Nothing left to claim: what the poll loop holds of the account ran before this answer too (the
    // poll loop wakes on the advance's commit and may take every due job first), and may enqueue more.
    const settled = await worker.whenSettled(scope);
    total += settled;
    if (settled === 0) return total;
  }
}
