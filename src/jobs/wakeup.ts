import { PostgresAdapter, sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { pgModule } from '../db/pg-module.js';
import type { Database } from '../db/schema.js';

/**
 * Wake-ups for idle workers. A job that is due at once (a webhook attempt, an email to send) would
 * otherwise wait for the next poll, up to a second. enqueueJob notifies inside the caller's
 * transaction:
 *
 * - PostgreSQL (LISTEN/NOTIFY): the notification is delivered at commit, when the row is visible, to
 *   the workers of every process, and dropped on rollback.
 * - SQLite: the workers of this process that share the connection (the embedded `serve`) are woken
 *   at once. Their claim needs the one connection, which the transaction holds until it ends, so it
 *   runs right after the commit and sees the row (after a rollback it finds nothing, which is
 *   harmless). Workers in other processes on the same file keep polling.
 *
 * Wake-ups only shorten the wait: polling stays the guarantee, so a lost notification (listener
 * reconnecting, a worker busy) delays nothing by more than one poll interval.
 */
export const JOBS_CHANNEL = 'intake_jobs';

/**
 * The channel of one installation, as SQL over the connection's schema: `intake_jobs`, or
 * `intake_jobs_<schema>` for an installation in a schema of its own (the `schema` parameter of
 * DATABASE_URL, which sets the search_path). Notifications go to every listener of the database, so
 * installations sharing one database would otherwise wake each other's workers on every job, each
 * wake-up a claim that finds nothing. Cut to PostgreSQL's 63-byte identifiers.
 */
const CHANNEL_OF_CONNECTION = `case when current_schema() = 'public' then '${JOBS_CHANNEL}' else left('${JOBS_CHANNEL}_' || current_schema(), 63) end`;

/** Jobs due within this long of their enqueue wake a worker; later ones are found by polling. */
export const WAKE_HORIZON_MS = 1_000;

export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * This process's wake-ups on SQLite, per database. Keyed by the dialect adapter, which a Kysely
 * instance shares with its transactions, so a job enqueued in a transaction finds its database's workers.
 */
const localWakers = new WeakMap<object, Set<() => void>>();

/** Adds `listener` to the database's set in `byAdapter` (see localWakers). Returns the unsubscribe. */
function subscribe<L>(byAdapter: WeakMap<object, Set<L>>, db: Kysely<Database>, listener: L): () => void {
  const adapter = db.getExecutor().adapter;
  let listeners = byAdapter.get(adapter);
  if (!listeners) {
    listeners = new Set();
    byAdapter.set(adapter, listeners);
  }
  const own = listeners;
  own.add(listener);
  return () => own.delete(listener);
}

/** Wakes `wake` whenever a job due now is enqueued through this database in this process. Returns the unsubscribe. */
export function onLocalJobDue(db: Kysely<Database>, wake: () => void): () => void {
  return subscribe(localWakers, db, wake);
}

/** What a worker needs to know of a job being written, to decide whether it takes it. */
export interface JobOnOffer {
  id: string;
  kind: string;
  concurrency_key: string | null;
  /** Real epoch ms. */
  due_at: number;
}

/**
 * A worker's answer to a job offered as it is written; the writer calls exactly one of the two once it
 * knows how its insert went. With a `lease` the worker took the job: it is written with that lease
 * (locked_until) and its first attempt counted, so no claim is needed and no other worker takes it.
 * Without one, the worker has no free slot for the job's kind or key: the job is written unclaimed,
 * the claim the worker makes as a slot frees takes it, and that worker lets the write's wake-up pass
 * (a claim for this one job, which would wait for the slot all the same).
 */
export interface WriteOffer {
  lease: number | undefined;
  /**
   * The insert ran (in the writer's transaction, if any). A worker that took the job reads the row
   * back: on SQLite that read waits for the transaction to end, so it finds the row after a commit and
   * nothing after a rollback, and gives its slot back then.
   */
  written(): void;
  /** The insert failed, or wrote nothing (a unique job pending already): the worker gives its slot back. */
  failed(): void;
}

/** A job offer's answer that took it: written with the worker's lease. */
export type TakenAtWrite = WriteOffer & { lease: number };

export type JobTaker = (job: JobOnOffer) => WriteOffer | undefined;

const localTakers = new WeakMap<object, Set<JobTaker>>();

/**
 * SQLite: `take` is offered every job due now that this process writes through this database (one
 * connection, so its read-back waits for the writer's transaction). Returns the unsubscribe.
 */
export function onLocalJobWrite(db: Kysely<Database>, take: JobTaker): () => void {
  return subscribe(localTakers, db, take);
}

/**
 * Offers a job about to be written to this process's workers (SQLite only; see onLocalJobWrite): the
 * first that takes it answers with its lease. Without a lease, the job is written unclaimed and the
 * workers are woken as usual, but for those that answered: they claim it as a slot frees.
 */
export function takeAtWrite(db: Kysely<Database>, job: JobOnOffer): WriteOffer | undefined {
  if (isPostgres(db)) return undefined;
  const takers = localTakers.get(db.getExecutor().adapter);
  if (!takers) return undefined;
  const later: WriteOffer[] = [];
  for (const take of takers) {
    const answer = take(job);
    if (answer?.lease !== undefined) return answer;
    if (answer) later.push(answer);
  }
  if (later.length === 0) return undefined;
  return {
    lease: undefined,
    written: () => later.forEach((answer) => answer.written()),
    failed: () => later.forEach((answer) => answer.failed()),
  };
}

/**
 * Transactions that have notified already: PostgreSQL delivers one notification per transaction for
 * the same channel and payload, so a second costs a statement and wakes nobody more.
 */
const notifiedIn = new WeakSet<Kysely<Database>>();

/** In the caller's transaction: tell the workers that a job is due now (see the top of this file). */
export async function notifyJobDue(db: Kysely<Database>): Promise<void> {
  if (isPostgres(db)) {
    if (db.isTransaction) {
      if (notifiedIn.has(db)) return;
      notifiedIn.add(db);
    }
    await sql`select pg_notify(${sql.raw(CHANNEL_OF_CONNECTION)}, '')`.execute(db);
    return;
  }
  const wakers = localWakers.get(db.getExecutor().adapter);
  if (wakers) for (const wake of wakers) wake();
}

export interface JobListener {
  /** Resolves once the first LISTEN is in place (tests wait for it). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface ListenerLogger {
  warn(obj: object, msg?: string): void;
}

/**
 * A dedicated connection LISTENing on the jobs channel; `onWake` runs on every notification.
 * When the connection drops it reconnects after a pause (polling covers the gap).
 */
export function listenForDueJobs(
  databaseUrl: string,
  onWake: () => void,
  logger: ListenerLogger,
  retryMs = 2_000,
): JobListener {
  const url = new URL(databaseUrl);
  // The schema parameter is ours (openDatabase's), not a PostgreSQL connection option.
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let listening: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (listening = resolve));

  const connect = async (): Promise<void> => {
    // The installation's search_path, as its pool has, so that the channel is its own.
    const next = new (pgModule().Client)({
      connectionString: url.toString(),
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    client = next;
    next.on('notification', () => onWake());
    next.on('error', (error) => {
      logger.warn({ err: error }, 'job wake-ups: listener connection lost; polling meanwhile');
      void next.end().catch(() => undefined);
      schedule();
    });
    try {
      await next.connect();
      const found = await next.query<{ channel: string }>(`select ${CHANNEL_OF_CONNECTION} as channel`);
      await next.query(`LISTEN "${found.rows[0]?.channel ?? JOBS_CHANNEL}"`);
      listening();
      if (closed) await next.end();
    } catch (error) {
      logger.warn({ err: error }, 'job wake-ups: cannot listen; polling meanwhile');
      await next.end().catch(() => undefined);
      schedule();
    }
  };
  const schedule = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, retryMs);
    retry.unref();
  };

  void connect();
  return {
    ready,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
