import { sql, type Kysely, type Selectable } from 'kysely';
import { z } from 'zod';
import type { Db } from '../db/database.js';
import type { Database, JobsTable } from '../db/schema.js';
import { notifyJobDue } from './wakeup.js';
import { GAVE_UP_LOCKED_UNTIL } from './worker.js';

/**
 * What an operator sees of the job table and may do to it (`intake jobs …`): list jobs by state and
 * kind, retry failed ones, purge old failed ones. A job's state is read from its lease:
 * - queued: waiting for its due time or a worker (no lease, or a lease that ran out: its worker died);
 * - running: a worker holds its lease now;
 * - failed: given up after its last attempt (the row is kept with its last error until purged).
 */
export const JOB_STATES = ['queued', 'running', 'failed'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** One job as `jobs list --json` prints it (a stable shape: fields are only ever added). */
export const JobListEntry = z.object({
  id: z.string(),
  kind: z.string(),
  state: z.enum(JOB_STATES),
  account_id: z.string(),
  livemode: z.boolean(),
  subject_id: z.string(),
  /** Attempts made so far (a running job's current attempt included). */
  attempts: z.number().int(),
  /** When it is (or was last) due, ISO 8601. */
  due_at: z.string(),
  created_at: z.string(),
  last_error: z.string().nullable(),
});
export type JobListEntry = z.infer<typeof JobListEntry>;

export function jobState(row: Pick<Selectable<JobsTable>, 'locked_until'>, now: number): JobState {
  if (row.locked_until === null) return 'queued';
  if (Number(row.locked_until) >= GAVE_UP_LOCKED_UNTIL) return 'failed';
  return Number(row.locked_until) > now ? 'running' : 'queued';
}

export interface JobListFilter {
  state?: JobState;
  kind?: string;
  /** At most this many, oldest due first (default 1000). */
  limit?: number;
}

export async function listJobs(
  db: Kysely<Database>,
  filter: JobListFilter,
  now: number,
): Promise<JobListEntry[]> {
  let query = db.selectFrom('jobs').selectAll();
  if (filter.kind !== undefined) query = query.where('kind', '=', filter.kind);
  if (filter.state === 'failed') query = query.where('locked_until', '>=', GAVE_UP_LOCKED_UNTIL);
  if (filter.state === 'running')
    query = query.where('locked_until', '>', now).where('locked_until', '<', GAVE_UP_LOCKED_UNTIL);
  if (filter.state === 'queued')
    query = query.where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]));
  const rows = await query
    .orderBy('due_at')
    .orderBy('id')
    .limit(filter.limit ?? 1000)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    state: jobState(row, now),
    account_id: row.account_id,
    livemode: Number(row.livemode) === 1,
    subject_id: row.subject_id,
    attempts: Number(row.attempts),
    due_at: new Date(Number(row.due_at)).toISOString(),
    created_at: row.created_at,
    last_error: row.last_error,
  }));
}

/**
 * Makes failed jobs due again at once, with their attempts counted from zero (their handler runs
 * again, as after a first failure). Only failed jobs: a queued or running job is left alone. Returns
 * the ids retried.
 */
export async function retryFailedJobs(
  db: Kysely<Database>,
  target: { id: string } | { kind?: string },
  now: number,
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    let query = trx
      .updateTable('jobs')
      .set({ locked_until: null, attempts: 0, unsent_attempts: 0, due_at: now })
      .where('locked_until', '>=', GAVE_UP_LOCKED_UNTIL);
    if ('id' in target) query = query.where('id', '=', target.id);
    else if (target.kind !== undefined) query = query.where('kind', '=', target.kind);
    const rows = await query.returning('id').execute();
    if (rows.length > 0) await notifyJobDue(trx);
    return rows.map((row) => row.id);
  });
}

/** Deletes failed jobs whose last attempt was due before `before` (epoch ms). Returns how many. */
export async function purgeFailedJobs(
  db: Kysely<Database>,
  filter: { before: number; kind?: string },
): Promise<number> {
  let query = db
    .deleteFrom('jobs')
    .where('locked_until', '>=', GAVE_UP_LOCKED_UNTIL)
    .where('due_at', '<', filter.before);
  if (filter.kind !== undefined) query = query.where('kind', '=', filter.kind);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** `30d`, `12h`, `45m` → milliseconds; null for anything else. */
export function parseAge(text: string): number | null {
  const match = /^(\d+)([dhm])$/.exec(text.trim());
  if (!match) return null;
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[match[2] as 'd' | 'h' | 'm'];
  return Number(match[1]) * unit;
}

/** The list as a table for people: one line per job, the last error cut to fit. */
export function formatJobTable(jobs: readonly JobListEntry[]): string {
  if (jobs.length === 0) return 'No jobs.';
  const header = ['ID', 'KIND', 'STATE', 'ATTEMPTS', 'DUE (UTC)', 'LAST ERROR'];
  const rows = jobs.map((job) => [
    job.id,
    job.kind,
    job.state,
    String(job.attempts),
    job.due_at.slice(0, 19).replace('T', ' '),
    oneLine(job.last_error ?? '', 60),
  ]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Per kind: jobs in each state, and how late the oldest due, unclaimed job is (0: none waiting). */
export interface KindBacklog {
  kind: string;
  queued: number;
  running: number;
  failed: number;
  oldestDueLagMs: number;
}

/**
 * The job table summed up by kind, in one query (for the metrics scrape). It reads every job, so it runs
 * off the event loop (`readAside`: half a second at a million jobs on SQLite).
 */
export async function jobBacklog(db: Db, now: number): Promise<KindBacklog[]> {
  const idle = sql<boolean>`(locked_until is null or locked_until <= ${now})`;
  const query = db.kysely
    .selectFrom('jobs')
    .select([
      'kind',
      sql<number>`sum(case when ${idle} then 1 else 0 end)`.as('queued'),
      sql<number>`sum(case when locked_until > ${now} and locked_until < ${GAVE_UP_LOCKED_UNTIL} then 1 else 0 end)`.as(
        'running',
      ),
      sql<number>`sum(case when locked_until >= ${GAVE_UP_LOCKED_UNTIL} then 1 else 0 end)`.as('failed'),
      sql<number | null>`min(case when ${idle} and due_at <= ${now} then due_at end)`.as('oldest_due'),
    ])
    .groupBy('kind')
    .orderBy('kind')
    .compile();
  const rows = await db.readAside(query);
  return rows.map((row) => ({
    kind: row.kind,
    queued: Number(row.queued),
    running: Number(row.running),
    failed: Number(row.failed),
    oldestDueLagMs: row.oldest_due === null ? 0 : Math.max(0, now - Number(row.oldest_due)),
  }));
}
