import { randomBytes } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type PgModule from 'pg';
import type { Pool, PoolClient } from 'pg';
import { PendingWrites, type StatementUnit } from './deferred-writes.js';
import { unitSender, type UnitSender } from './pg-units.js';

/**
 * Distinct statements given a name (prepared once per connection) in one process. A prepared statement
 * with its generic plan holds about 36 KB of the server's memory on each connection that ran it (measured
 * on PostgreSQL 15 with `pg_backend_memory_contexts`): at most about 7 MB a connection. Statements beyond
 * these run unnamed, as before.
 */
export const MAX_NAMED_STATEMENTS = 200;

/** A statement is named at its this-many-th run in the process: the ones run once or twice never are. */
export const RUNS_BEFORE_NAMING = 3;

/** Statements whose runs are counted until named; the count starts over when it is full. */
const MAX_COUNTED_STATEMENTS = 2_000;

/** PostgreSQL's answer to a named statement whose result columns changed since it was prepared (a migration). */
function isStalePlan(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as Error & { code?: unknown }).code === '0A000' &&
    error.message.includes('cached plan must not change result type')
  );
}

/**
 * PostgreSQL's answers when a connection does not hold what this process prepared on it: "prepared
 * statement … does not exist" (26000) or "… already exists" (42P05). A direct connection never gives
 * them; a pooler that hands each transaction to any server connection (PgBouncer's transaction mode
 * without its own tracking of prepared statements) does.
 */
function isPooledAway(error: unknown): boolean {
  const code = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  return code === '26000' || code === '42P05';
}

export interface NamedStatementsPool extends PostgresPool {
  /**
   * Runs `task` with every statement unnamed (migrations change the tables that named statements read),
   * then retires every connection opened before it ends.
   */
  unnamedWhile<T>(task: () => Promise<T>): Promise<T>;
}

/**
 * Kysely's pool, with every statement that takes parameters and runs often (RUNS_BEFORE_NAMING) sent
 * as a named statement: PostgreSQL parses it once per connection and, once it has seen that a generic
 * plan costs no more than the custom ones (after five runs), plans it once too. Without a name, every
 * statement is parsed and planned anew on every run, which on a small machine is much of a short
 * statement's cost.
 *
 * A migration made by another process while this one runs can change the columns a prepared
 * `select *` returns: PostgreSQL then refuses the statement ("cached plan must not change result type")
 * before running it. Every connection opened before that moment is then retired (closed when it is
 * next released or taken from the pool, so that its prepared statements go with it), and the statement
 * is run again unnamed if no transaction was open; inside a transaction the error ends the
 * transaction, as any error does.
 *
 * Behind a pooler that does not keep a client's prepared statements (see isPooledAway), the first
 * named statement sent to a server connection that lacks it fails: from then on nothing is named in
 * this process, `onPooledAway` is told once, and that statement is run again unnamed if no
 * transaction was open. Names carry a prefix drawn at random for each process, so that behind such a
 * pooler one process's name never runs another process's statement.
 */
export function withNamedStatements(
  pool: Pool,
  options: {
    enabled: boolean;
    onPooledAway?: (error: Error) => void;
    /** pg's module (its `Query`), which sends a transaction's `begin` and `commit` with its statements. */
    pg: Pick<typeof PgModule, 'Query'>;
  },
): NamedStatementsPool {
  const sendUnit: UnitSender | undefined = unitSender(options.pg);
  const prefix = `k${randomBytes(4).toString('hex')}_`;
  let pooledAway = false;
  const names = new Map<string, string>();
  const runs = new Map<string, number>();
  /** Moves when a connection finds its prepared statements stale; older connections are retired. */
  let generation = 0;
  let migrations = 0;
  const generationOf = new WeakMap<PoolClient, number>();
  const wrappers = new WeakMap<PoolClient, PostgresPoolClient>();

  const nameOf = (text: string): string | undefined => {
    if (!options.enabled || pooledAway || migrations > 0) return undefined;
    const name = names.get(text);
    if (name !== undefined || names.size >= MAX_NAMED_STATEMENTS) return name;
    const ran = (runs.get(text) ?? 0) + 1;
    if (ran < RUNS_BEFORE_NAMING) {
      if (runs.size >= MAX_COUNTED_STATEMENTS) runs.clear();
      runs.set(text, ran);
      return undefined;
    }
    runs.delete(text);
    const named = `${prefix}${names.size.toString(36)}`;
    names.set(text, named);
    return named;
  };

  /** Notes what a refused named statement says about this process's names (see isPooledAway, isStalePlan). */
  function noteRefusal(client: PoolClient, error: unknown): boolean {
    if (isPooledAway(error)) {
      if (!pooledAway) {
        pooledAway = true;
        options.onPooledAway?.(error as Error);
      }
      return true;
    }
    if (isStalePlan(error)) {
      if (generationOf.get(client) === generation) generation += 1;
      return true;
    }
    return false;
  }

  async function run<R>(
    client: PoolClient,
    unit: StatementUnit,
    inTransaction: boolean,
  ): Promise<PostgresQueryResult<R>> {
    const { text, values } = unit.main;
    const name = values.length > 0 ? nameOf(text) : undefined;
    if (unit.before !== undefined || unit.after !== undefined) {
      if (!sendUnit) throw new Error('A unit of statements reached a connection that cannot send one.');
      try {
        return await sendUnit(client, name === undefined ? unit : { ...unit, main: { text, values, name } });
      } catch (error) {
        // A unit always runs in a transaction, which the error has failed: nothing is run again.
        noteRefusal(client, error);
        throw error;
      }
    }
    if (name === undefined) return (await client.query(text, values)) as unknown as PostgresQueryResult<R>;
    try {
      return (await client.query({ name, text, values })) as unknown as PostgresQueryResult<R>;
    } catch (error) {
      if (!noteRefusal(client, error)) throw error;
      // Refused before it ran: outside a transaction, run it again unnamed.
      if (inTransaction) throw error;
      return (await client.query(text, values)) as unknown as PostgresQueryResult<R>;
    }
  }

  function wrap(client: PoolClient): PostgresPoolClient {
    let wrapper = wrappers.get(client);
    if (!wrapper) {
      const pending = new PendingWrites(sendUnit !== undefined);
      function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
      function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
      function query<R>(
        sqlOrCursor: string | PostgresCursor<R>,
        parameters?: ReadonlyArray<unknown>,
      ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
        if (typeof sqlOrCursor !== 'string') {
          // A cursor (Kysely's streams) is a submittable of pg's own: passed on as it is.
          if (pending.size > 0)
            throw new Error('A cursor cannot carry deferred writes: send a statement first.');
          const begin = pending.takeBegin();
          if (begin !== undefined) void client.query(begin).catch(() => undefined);
          return client.query(sqlOrCursor as never);
        }
        const inTransaction = pending.inTransaction;
        return pending.route(
          { text: sqlOrCursor, values: [...(parameters ?? [])] },
          (unit) => run<R>(client, unit, inTransaction),
          { command: 'SELECT', rowCount: 0, rows: [] },
        );
      }
      wrapper = {
        query,
        // A connection of an older generation is closed instead of returned (its statements are stale).
        release: () => {
          pending.clear();
          client.release(generationOf.get(client) !== generation);
        },
      };
      wrappers.set(client, wrapper);
    }
    return wrapper;
  }

  return {
    async connect() {
      for (;;) {
        const client = await pool.connect();
        const born = generationOf.get(client);
        if (born === undefined) generationOf.set(client, generation);
        else if (born !== generation) {
          client.release(true);
          continue;
        }
        return wrap(client);
      }
    },
    end: () => pool.end(),
    async unnamedWhile(task) {
      migrations += 1;
      try {
        return await task();
      } finally {
        migrations -= 1;
        // Whatever was prepared before may read tables the migration changed: start afresh.
        generation += 1;
      }
    },
  };
}
