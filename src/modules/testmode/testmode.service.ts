import type { Db } from '../../db/database.js';
import { assertTestMode, type AuthContext } from '../../http/auth.js';
import type { Clock } from '../../lib/clock.js';
import { GAVE_UP_LOCKED_UNTIL, type Worker } from '../../jobs/worker.js';
import { auditInTransaction } from '../audit/audit.scope.js';

/** 10 years of 366 days: the largest single advance. */
export const MAX_ADVANCE_SECONDS = 10 * 366 * 86_400;

/** A guard against a job that keeps enqueueing due work for itself: past this, the rest stays queued. */
const MAX_JOBS_PER_ADVANCE = 10_000;
/** How long to wait for due test jobs that another worker is running right now. */
const IN_FLIGHT_WAIT_MS = 10_000;
const IN_FLIGHT_POLL_MS = 25;

export interface ClockAdvance {
  test_clock: string;
  advanced_seconds: number;
  jobs_run: number;
}

/**
 * Moves the account's test clock forward and runs what fell due. In one transaction the offset grows
 * and every test job of the account comes earlier by the same amount (due_at is real time), so the
 * jobs due by the new test time are due now in real time. Then the worker runs them (and the due work
 * they enqueue) before this returns.
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
    await trx
      .updateTable('jobs')
      .set((eb) => ({ due_at: eb('due_at', '-', deltaMs) }))
      .where('account_id', '=', accountId)
      .where('livemode', '=', 0)
      .execute();
    const row = await trx
      .selectFrom('accounts')
      .select('test_clock_offset_ms')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    // Written here, before the due jobs run in this request: the entry is the advance's, not a job's.
    await auditInTransaction(trx);
    return Number(row.test_clock_offset_ms);
  });

  const jobsRun = await runDueTestJobs(db, worker, clock, accountId);
  return {
    test_clock: new Date(clock.now().getTime() + offsetMs).toISOString(),
    advanced_seconds: seconds,
    jobs_run: jobsRun,
  };
}

/**
 * Runs the account's due test jobs until none is left, the due work they enqueue included. Due test
 * jobs that another worker (maybe in another process) claimed just before us are waited for, for a
 * bounded time, so that "every job due by the new time has run" holds whoever ran it.
 */
async function runDueTestJobs(db: Db, worker: Worker, clock: Clock, accountId: string): Promise<number> {
  let total = 0;
  // Operational waiting, not a domain decision: measured on the monotonic clock.
  const waitUntil = performance.now() + IN_FLIGHT_WAIT_MS;
  for (;;) {
    const ran = await worker.runDue({ accountId, livemode: false });
    total += ran;
    if (total >= MAX_JOBS_PER_ADVANCE) return total;
    if (ran > 0) continue;
    if (performance.now() > waitUntil || !(await dueJobsInFlight(db, clock, accountId))) return total;
    await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
  }
}

/**
 * Whether a due test job of the account is being run right now (claimed, lease not expired), or is
 * being claimed: runDue just found nothing it could take, so a due job that still looks unclaimed is
 * row-locked by another worker's claim that has not committed yet (SKIP LOCKED passed over it).
 */
async function dueJobsInFlight(db: Db, clock: Clock, accountId: string): Promise<boolean> {
  const now = clock.now().getTime();
  const row = await db.kysely
    .selectFrom('jobs')
    .select('id')
    .where('account_id', '=', accountId)
    .where('livemode', '=', 0)
    .where('due_at', '<=', now)
    .where((eb) =>
      eb.or([
        eb('locked_until', 'is', null),
        eb.and([eb('locked_until', '>=', now), eb('locked_until', '<', GAVE_UP_LOCKED_UNTIL)]),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
