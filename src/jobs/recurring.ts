import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { enqueueJob, type Job, type JobDefinition } from './jobs.js';

/**
 * Recurring system jobs (the retention sweepers): one pending job per kind at any time, held by the
 * unique key `recurring:<kind>`. A worker plans each at its start (nothing is added while one is
 * planned); each run ends its own job and plans the next in one transaction, so a crash can delay a
 * run but never lose the series or double it. A run that fails is retried like any job; one given up
 * frees the key, and the next worker start plans the series again.
 */
export interface RecurringJob {
  kind: JobDefinition<Record<string, never>, Record<string, never>>;
  /** Time between the end of one run and the next. */
  everyMs: number;
}

/** Recurring jobs belong to no tenant: the system's account id in the job table. */
export const SYSTEM_TENANT = { accountId: 'system', livemode: true } as const;

function uniqueKey(recurring: RecurringJob): string {
  return `recurring:${recurring.kind.kind}`;
}

async function plan(db: Kysely<Database>, recurring: RecurringJob, dueAt: number): Promise<void> {
  await enqueueJob(db, {
    ...SYSTEM_TENANT,
    kind: recurring.kind,
    subjectId: recurring.kind.kind,
    payload: {},
    dueAt,
    uniqueKey: uniqueKey(recurring),
  });
}

/** At a worker's start: plans each series that has no pending job, its first run one interval away. */
export async function planRecurringJobs(
  db: Kysely<Database>,
  recurring: readonly RecurringJob[],
  now: number,
): Promise<void> {
  for (const job of recurring) await plan(db, job, now + job.everyMs);
}

/**
 * A recurring job's handler: does the work, then ends the job and plans the next run in one
 * transaction (Job.complete frees the unique key for the next one).
 */
export function recurringHandler(
  db: Kysely<Database>,
  recurring: RecurringJob,
  now: () => number,
  work: () => Promise<unknown>,
): (job: Job<Record<string, never>>) => Promise<void> {
  return async (job) => {
    await work();
    await job.finish(async (trx) => {
      await plan(trx, recurring, now() + recurring.everyMs);
    });
  };
}
