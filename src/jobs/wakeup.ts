import { PostgresAdapter, sql, type Kysely } from 'kysely';
import pg from 'pg';
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

/** Wakes `wake` whenever a job due now is enqueued through this database in this process. Returns the unsubscribe. */
export function onLocalJobDue(db: Kysely<Database>, wake: () => void): () => void {
  const adapter = db.getExecutor().adapter;
  let wakers = localWakers.get(adapter);
  if (!wakers) {
    wakers = new Set();
    localWakers.set(adapter, wakers);
  }
  const own = wakers;
  own.add(wake);
  return () => own.delete(wake);
}

/** In the caller's transaction: tell the workers that a job is due now (see the top of this file). */
export async function notifyJobDue(db: Kysely<Database>): Promise<void> {
  if (isPostgres(db)) {
    await sql`select pg_notify(${JOBS_CHANNEL}, '')`.execute(db);
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
  url.searchParams.delete('schema');
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let listening: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (listening = resolve));

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url.toString() });
    client = next;
    next.on('notification', () => onWake());
    next.on('error', (error) => {
      logger.warn({ err: error }, 'job wake-ups: listener connection lost; polling meanwhile');
      void next.end().catch(() => undefined);
      schedule();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${JOBS_CHANNEL}`);
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
