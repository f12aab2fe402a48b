import { context, propagation } from '@opentelemetry/api';
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../db/schema.js';
import { offsetClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { isPostgres, notifyJobDue, takeAtWrite, WAKE_HORIZON_MS } from './wakeup.js';
import { preparedInsert, preparedQuery } from '../db/prepared.js';

/**
 * Background jobs: a typed registry of job kinds, and the functions that write jobs in the caller's
 * transaction (transactional outbox: a state change and the work it causes commit together).
 * The worker (worker.ts) claims due rows and dispatches them to the handler registered for their kind.
 */

/** The largest valid Date (year 275760): "locked forever", for jobs given up on. */
export const GAVE_UP_LOCKED_UNTIL = 8_640_000_000_000_000;

/**
 * That a job is not given up on, word for word as the partial indexes of jobs state it (migration
 * 0038: the indexes the worker's claims read): a planner uses such an index only for a query that
 * states its condition. Jobs given up on stay for the operator but out of those indexes, so they
 * never lengthen a claim. Columns named through `column` (default: bare).
 */
export function notGivenUp(
  column: (name: string) => RawBuilder<unknown> = (name) => sql.ref(name),
): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${column('locked_until')} is null or ${column('locked_until')} < ${sql.lit(GAVE_UP_LOCKED_UNTIL)})`;
}

/** A job kind: its name, and the zod schema its payload must satisfy (checked on enqueue and on run). */
export interface JobDefinition<Input = unknown, Output = Input> {
  readonly kind: string;
  readonly schema: z.ZodType<Output, Input>;
  /** Test-only kinds are left out of definedKinds(): the production start-up check does not ask for them. */
  readonly testOnly: boolean;
  /**
   * Jobs of this kind one worker runs at once; undefined: the worker's default. Each kind has its own
   * slots, so a kind whose jobs wait (a slow mail relay) cannot hold the slots of the others.
   */
  readonly concurrency: number | undefined;
  /** How long a handler of this kind may run before it is aborted; undefined: the worker's default. */
  readonly timeoutMs: number | undefined;
  /**
   * At most once: a handler of this kind is never started twice for one job. Not retried when it fails
   * or times out, and not run again when an earlier attempt may have started (its worker died, or
   * was shut down mid-run): the job is given up instead, for sends that must not be repeated. A kind
   * that marksIrreversible narrows this to the part after its mark (below).
   */
  readonly atMostOnce: boolean;
  /**
   * With atMostOnce: the handler says where the part that must not run twice begins, by calling
   * Job.beginIrreversible() just before it (the send). A run that ends before that call sent nothing:
   * cut short by a shutdown, it is handed back like any job's, to run again; failed (a database error
   * while reading, a timeout while rendering), it is retried after a backoff like any job's, and given
   * up after the last attempt. After the call, the job is given up. Without this, the whole run counts
   * as irreversible.
   */
  readonly marksIrreversible: boolean;
  /**
   * Jobs of this kind with one concurrency key (NewJob.concurrencyKey) one worker runs at once;
   * undefined: no limit per key.
   */
  readonly keyConcurrency: number | undefined;
  /**
   * With keyConcurrency: jobs of one key a worker claims beyond the key's slots, started as they free,
   * so that one claim serves many jobs of a busy key; undefined: the worker's prefetch, at most
   * keyConcurrency. Ignored for an at-most-once kind (it never claims ahead).
   */
  readonly keyPrefetch: number | undefined;
}

export interface JobKindOptions {
  testOnly?: boolean;
  concurrency?: number;
  timeoutMs?: number;
  atMostOnce?: boolean;
  marksIrreversible?: boolean;
  keyConcurrency?: number;
  keyPrefetch?: number;
}

/** Either a definition (typed payload) or a kind's name (payload checked at run time only). */
export type JobKindRef<Input = unknown, Output = Input> = JobDefinition<Input, Output> | string;

/** Any kind, by definition or by name. */
export type AnyJobKind = JobKindRef<unknown, unknown>;

const definitions = new Map<string, JobDefinition>();

const KIND_PATTERN = /^[a-z][a-z0-9_.]*$/;

/**
 * Defines a job kind. Each kind is defined once per process (a second definition of a name throws,
 * so two modules cannot silently share one). Tests define their own kinds with `{ testOnly: true }`.
 */
export function defineJob<S extends z.ZodType>(
  kind: string,
  payloadSchema: S,
  options: JobKindOptions = {},
): JobDefinition<z.input<S>, z.output<S>> {
  if (!KIND_PATTERN.test(kind)) throw new Error(`Job kind "${kind}" must match ${String(KIND_PATTERN)}`);
  if (definitions.has(kind)) throw new Error(`Job kind "${kind}" is already defined`);
  for (const [name, value] of Object.entries({
    concurrency: options.concurrency,
    timeoutMs: options.timeoutMs,
    keyConcurrency: options.keyConcurrency,
  })) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new Error(`Job kind "${kind}": ${name} must be a positive integer`);
  }
  const { keyPrefetch } = options;
  if (keyPrefetch !== undefined && !(Number.isInteger(keyPrefetch) && keyPrefetch >= 0))
    throw new Error(`Job kind "${kind}": keyPrefetch must be a whole number`);
  if (keyPrefetch !== undefined && options.keyConcurrency === undefined)
    throw new Error(`Job kind "${kind}": keyPrefetch needs keyConcurrency`);
  if (options.marksIrreversible && !options.atMostOnce)
    throw new Error(`Job kind "${kind}": marksIrreversible needs atMostOnce`);
  const definition: JobDefinition<z.input<S>, z.output<S>> = {
    kind,
    schema: payloadSchema as z.ZodType<z.output<S>, z.input<S>>,
    testOnly: options.testOnly ?? false,
    concurrency: options.concurrency,
    timeoutMs: options.timeoutMs,
    atMostOnce: options.atMostOnce ?? false,
    marksIrreversible: options.marksIrreversible ?? false,
    keyConcurrency: options.keyConcurrency,
    keyPrefetch,
  };
  definitions.set(kind, definition);
  return definition;
}

/** The production job kinds defined in this process (the worker's start-up check needs one handler each). */
export function definedKinds(): string[] {
  return [...definitions.values()].filter((d) => !d.testOnly).map((d) => d.kind);
}

/** The definition of a kind, test-only ones included; undefined for an unknown name. */
export function jobDefinition(kind: string): JobDefinition | undefined {
  return definitions.get(kind);
}

export function kindName(kind: AnyJobKind): string {
  return typeof kind === 'string' ? kind : kind.kind;
}

function resolveDefinition(kind: AnyJobKind): JobDefinition {
  const name = kindName(kind);
  const definition = definitions.get(name);
  if (!definition) throw new Error(`No job kind "${name}" is defined (defineJob)`);
  return definition;
}

export interface NewJob<Input = unknown> {
  accountId: string;
  livemode: boolean;
  kind: JobKindRef<Input, unknown>;
  /** The record the job is about (intake, chase, delivery…): cancelJobs finds jobs by it. */
  subjectId: string;
  payload: Input;
  /** Real time (epoch ms) at which the job is due. A test-mode job due at test time T: T − the account's offset. */
  dueAt: number;
  /**
   * For a job that must exist once: while a job with this key is pending (or running), enqueueing
   * another adds nothing and returns the pending job's id. Keys are global: prefix them with the kind.
   */
  uniqueKey?: string;
  /**
   * What the job competes for, e.g. a webhook endpoint (see JobDefinition.keyConcurrency). Not empty:
   * a job without a key leaves it out.
   */
  concurrencyKey?: string;
}

/** The active span's W3C traceparent (tracing on, inside a traced request or job), else null. */
function currentTraceparent(): string | null {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Writes a job, usually in the caller's transaction. The payload is validated with the kind's schema
 * (a bad payload throws here, at the caller, not later in the worker). Returns the job id (`job_…`).
 */
export async function enqueueJob<Input>(db: Kysely<Database>, job: NewJob<Input>): Promise<string> {
  const definition = resolveDefinition(job.kind);
  const checked = definition.schema.safeParse(job.payload);
  if (!checked.success) {
    throw new Error(`Invalid payload for job kind "${definition.kind}": ${checked.error.message}`);
  }
  if (!Number.isFinite(job.dueAt)) throw new Error(`Job dueAt must be epoch milliseconds, got ${job.dueAt}`);
  if (job.concurrencyKey === '')
    throw new Error('Job concurrencyKey must not be empty (leave it out instead)');
  const id = newId('job');
  const row = {
    id,
    account_id: job.accountId,
    livemode: job.livemode ? 1 : 0,
    kind: definition.kind,
    subject_id: job.subjectId,
    // The input form is stored: the worker parses it again, so transforms apply exactly once.
    payload: JSON.stringify(job.payload ?? null),
    due_at: Math.round(job.dueAt),
    locked_until: null,
    attempts: 0,
    last_error: null,
    // Bookkeeping only (never compared with a due time), so real time, not a mode clock.
    created_at: new Date().toISOString(),
    unique_key: job.uniqueKey ?? null,
    concurrency_key: job.concurrencyKey ?? null,
    trace_context: currentTraceparent(),
  };
  // Due now, in a process whose worker has a free slot for it (SQLite): written claimed by that worker,
  // which runs it once the transaction has committed, with no claim and no wake-up. With no free slot,
  // written unclaimed for the claim that worker makes as a slot frees.
  const offer = job.dueAt <= Date.now() ? takeAtWrite(db, row) : undefined;
  const lease = offer?.lease;
  const written = lease === undefined ? row : { ...row, locked_until: lease, attempts: 1 };
  // The unique key of a job left unwritten because a job with that key is pending.
  let pendingKey: string | undefined;
  try {
    if (job.uniqueKey === undefined) await insertJobRows(db, [written]);
    else if ((await insertUniqueJob(db, ...JOB_COLUMNS.map((column) => written[column]))).length === 0)
      pendingKey = job.uniqueKey;
  } catch (error) {
    offer?.failed();
    throw error;
  }
  if (pendingKey === undefined) offer?.written();
  else offer?.failed();
  if (pendingKey !== undefined) {
    const pending = await db
      .selectFrom('jobs')
      .select('id')
      .where('unique_key', '=', pendingKey)
      .executeTakeFirst();
    // Gone between the two statements (it ran and finished): the key is free again.
    return pending?.id ?? enqueueJob(db, job);
  }
  if (lease !== undefined) return id;
  // A job due now wakes an idle worker at commit; others wait for a poll.
  if (job.dueAt <= Date.now() + WAKE_HORIZON_MS) await notifyJobDue(db);
  return id;
}

/** The columns every enqueued job writes, in the order of insertUniqueJob's parameters. */
const JOB_COLUMNS = [
  'id',
  'account_id',
  'livemode',
  'kind',
  'subject_id',
  'payload',
  'due_at',
  'locked_until',
  'attempts',
  'last_error',
  'created_at',
  'unique_key',
  'concurrency_key',
  'trace_context',
] as const;

// Every outcome of a job that plans the next one enqueues it: both statements compiled once. A job
// without a unique key rides, on PostgreSQL, with the transaction's next statement.
const insertJobRows = preparedInsert('jobs', JOB_COLUMNS, { maxRows: 1, deferrable: true });
const insertUniqueJob = preparedQuery(
  (db: Kysely<Database>, ...values: unknown[]) =>
    db
      .insertInto('jobs')
      .values(Object.fromEntries(JOB_COLUMNS.map((column, index) => [column, values[index]])) as never)
      .onConflict((conflict) => conflict.column('unique_key').doNothing())
      .returning('id'),
  JOB_COLUMNS.map((column): unknown => `jobs.${column}`),
);

/**
 * Deletes the jobs of a subject, or of several (optionally of one kind). Returns how many were removed.
 * A job already running finishes; its completion then finds no row, which is harmless. `idleOnly`
 * leaves running jobs alone, for a caller whose running job must still end itself (Job.complete).
 */
export async function cancelJobs(
  db: Kysely<Database>,
  filter: { subjectId: string | readonly string[]; kind?: AnyJobKind; idleOnly?: boolean },
): Promise<number> {
  if (typeof filter.subjectId === 'string' && filter.kind !== undefined) {
    const kind = kindName(filter.kind);
    const deleted = filter.idleOnly
      ? await deleteIdleJobsOfSubject(db, filter.subjectId, kind)
      : await deleteJobsOfSubject(db, filter.subjectId, kind);
    return deleted.length;
  }
  const subjects = typeof filter.subjectId === 'string' ? [filter.subjectId] : [...filter.subjectId];
  if (subjects.length === 0) return 0;
  let query = db.deleteFrom('jobs').where('subject_id', 'in', subjects);
  if (filter.kind !== undefined) query = query.where('kind', '=', kindName(filter.kind));
  if (filter.idleOnly) query = query.where('locked_until', 'is', null);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}

// One subject's jobs of one kind, the usual call (an intake's creation replaces its overdue check, a
// decision its auto-approval): compiled once, each answering the ids it deleted.
const jobsOfSubject = (db: Kysely<Database>, subjectId: string, kind: string) =>
  db.deleteFrom('jobs').where('subject_id', '=', subjectId).where('kind', '=', kind);
const deleteJobsOfSubject = preparedQuery(
  (db: Kysely<Database>, subjectId: string, kind: string) =>
    jobsOfSubject(db, subjectId, kind).returning('id'),
  ['subject', 'kind'],
);
const deleteIdleJobsOfSubject = preparedQuery(
  (db: Kysely<Database>, subjectId: string, kind: string) =>
    jobsOfSubject(db, subjectId, kind).where('locked_until', 'is', null).returning('id'),
  ['subject', 'kind'],
);

/** The ids of the jobs of a subject and kind, waiting or running. */
export async function jobIdsOf(
  db: Kysely<Database>,
  filter: { subjectId: string; kind: AnyJobKind },
): Promise<string[]> {
  const rows = await selectJobIdsOfSubject(db, filter.subjectId, kindName(filter.kind));
  return rows.map((r) => r.id);
}

const selectJobIdsOfSubject = preparedQuery(
  (db: Kysely<Database>, subjectId: string, kind: string) =>
    db.selectFrom('jobs').select('id').where('subject_id', '=', subjectId).where('kind', '=', kind),
  ['subject', 'kind'],
);

/**
 * The ids of the jobs of one kind about parts of a record (subjects `<id>/…`), oldest due first,
 * none given up on; `dueBy` (real epoch ms): only those due by then (read from the kind's due jobs).
 */
export async function jobIdsUnder(
  db: Kysely<Database>,
  filter: { subjectId: string; kind: AnyJobKind; dueBy?: number },
): Promise<string[]> {
  let query = db
    .selectFrom('jobs')
    .select('id')
    .where('subject_id', 'like', `${filter.subjectId}/%`)
    .where('kind', '=', kindName(filter.kind))
    .where(notGivenUp());
  if (filter.dueBy !== undefined) query = query.where('due_at', '<=', filter.dueBy);
  const rows = await query.orderBy('due_at').orderBy('id').execute();
  return rows.map((r) => r.id);
}

/**
 * What a request may ask of its process's job worker: run given jobs now (their outcome is the
 * answer), or look for due jobs at once instead of at the next poll.
 */
export interface JobRunner {
  /** Runs these jobs now, due or not; see Worker.runNow. Resolves to how many this call ran. */
  runNow(ids: readonly string[]): Promise<number>;
  nudge(): void;
}

/** A process without a worker: jobs wait for the workers that poll (a request's runNow runs none). */
export const noJobRunner: JobRunner = {
  runNow: () => Promise.resolve(0),
  nudge: () => undefined,
};

/**
 * A test clock moved forward by `ms`: every job of the account's test mode comes earlier by as much
 * (due_at is real time), so what fell due by the new test time is due now. In the caller's transaction;
 * idle workers are woken at its commit.
 */
export async function bringTestJobsForward(
  db: Kysely<Database>,
  accountId: string,
  ms: number,
): Promise<void> {
  await db
    .updateTable('jobs')
    .set((eb) => ({ due_at: eb('due_at', '-', ms) }))
    .where('account_id', '=', accountId)
    .where('livemode', '=', 0)
    .execute();
  await notifyJobDue(db);
}

/**
 * Deletes every pending job about a record or about a part of it (subjects `<id>` and `<id>/…`): the
 * subject itself, and the range of subjects from `<id>/` up to `<id>0` ('0' follows '/' in byte order),
 * each an index range however many jobs are pending. The range is compared byte by byte: on
 * PostgreSQL under `collate "C"`, which an index of its own serves (migration 0047), as a database's
 * own collation may order "in_a/b" after "in_a0"; SQLite compares bytes already. (A LIKE pattern,
 * case-insensitive on SQLite and collation-bound on PostgreSQL, read the whole table.)
 */
export async function cancelJobsUnder(db: Kysely<Database>, subjectId: string): Promise<void> {
  const bytes = isPostgres(db) ? sql` collate "C"` : sql``;
  const subject = sql`${sql.ref('subject_id')}${bytes}`;
  await db
    .deleteFrom('jobs')
    .where((eb) =>
      eb.or([
        eb('subject_id', '=', subjectId),
        eb.and([eb(subject, '>=', `${subjectId}/`), eb(subject, '<', `${subjectId}0`)]),
      ]),
    )
    .execute();
}

/** What a handler is given: the job row, its payload parsed with the kind's schema. */
export interface Job<P> {
  id: string;
  accountId: string;
  livemode: boolean;
  kind: string;
  subjectId: string;
  payload: P;
  /** Failed attempts before this one (0 on the first run). */
  attempts: number;
  /**
   * Aborted when the handler runs out of time (the attempt then counts as failed) or the worker shuts
   * down (the job is handed back, due at once): pass it to every request that may wait.
   */
  signal: AbortSignal;
  /**
   * Ends the job in the caller's transaction (its row deleted, fenced by this worker's lease), so that
   * a handler's outcome and the end of its job commit together. Throws JobLeaseLostError when the job
   * is no longer this worker's (taken over after its lease ran out, or cancelled): the transaction
   * then records nothing.
   */
  complete: (trx: Kysely<Database>) => Promise<void>;
  /**
   * Ends the job and records `work` together, like complete() in a transaction of the handler's own;
   * on SQLite in a transaction shared with the outcomes of other jobs finishing at the same moment
   * (group commit, see group-commit.ts), one commit for many. Resolves to `work`'s value once
   * committed. Throws JobLeaseLostError when the job is no longer this worker's, and `work`'s error
   * when it fails; either way nothing of `work` is recorded.
   */
  finish: <T>(work: (trx: Kysely<Database>) => Promise<T>) => Promise<T>;
  /**
   * Ends the job with one statement of the handler's own, run outside any transaction: `end` deletes
   * the job's row where its id and lease match the fence, records the outcome in the same statement
   * (PostgreSQL's data-modifying WITH, so that the outcome is recorded only if the row was deleted),
   * and says whether the row was deleted. For PostgreSQL, where each statement of a transaction is a
   * round trip of its own. Throws JobLeaseLostError when the row was not deleted.
   */
  finishInOne: <T>(end: (fence: JobFence) => Promise<{ ended: boolean; value: T }>) => Promise<T>;
  /**
   * For a kind that marksIrreversible: call just before the part that must not run twice (the send).
   * Throws the signal's reason when the run was already cut short: nothing irreversible has happened,
   * and a run cut short by a shutdown is handed back. For other kinds it only throws when cut short.
   */
  beginIrreversible: () => void;
}

/** What makes a job's row this worker's: its id, and a lease value it carries (any of them). */
export interface JobFence {
  id: string;
  leases: readonly number[];
}

/** complete() found the job no longer held by this worker. */
export class JobLeaseLostError extends Error {
  constructor(jobId: string) {
    super(`job ${jobId} is no longer held by this worker`);
    this.name = 'JobLeaseLostError';
  }
}

/**
 * Runs one job. Resolving means done (the row is deleted); throwing means retry later with backoff.
 * A handler may run more than once for one job (a crash after its work, before the row is deleted):
 * make it idempotent, or define its kind atMostOnce.
 */
export type JobHandler<P> = (job: Job<P>) => Promise<void>;

/**
 * The clock of a job's mode: real time for live jobs, real time plus the account's test offset
 * for test jobs (read now, so a handler run by advance_clock sees the advanced time).
 */
export async function jobClock(
  db: Kysely<Database>,
  base: Clock,
  job: { accountId: string; livemode: boolean },
): Promise<Clock> {
  if (job.livemode) return base;
  const account = await db
    .selectFrom('accounts')
    .select('test_clock_offset_ms')
    .where('id', '=', job.accountId)
    .executeTakeFirst();
  return offsetClock(base, Number(account?.test_clock_offset_ms ?? 0));
}
