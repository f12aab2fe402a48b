import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * Runs a compiled read at once, outside Kysely's executor, or answers `undefined` when it cannot (then
 * the query goes through Kysely). Registered by the SQLite handle (database.ts): its one connection is
 * synchronous, so a read run directly between two statements of nobody's transaction sees exactly what
 * Kysely's executor would, without its connection lock and promise chain.
 */
export type DirectReader = (sql: string, parameters: readonly unknown[]) => unknown[] | undefined;

const directReaders = new WeakMap<Kysely<Database>, DirectReader>();

/** Lets prepared queries on `db` (the root handle, never a transaction's) run through `read`. */
export function registerDirectReader(db: Kysely<Database>, read: DirectReader): void {
  directReaders.set(db, read);
}

/**
 * A query compiled once per database handle and then run with new parameters. For hot paths only:
 * building a Kysely query costs more than running a small indexed one on SQLite. On SQLite, outside a
 * transaction, the compiled read runs directly on the connection (registerDirectReader).
 * The builder must use its placeholder arguments as the query's only parameters, in the order they
 * appear in the SQL (checked when compiled: give distinct placeholders so that the check can tell).
 */
export function preparedQuery<Row, P extends unknown[]>(
  build: (db: Kysely<Database>, ...placeholders: P) => Compilable<Row>,
  placeholders: P,
): (db: Kysely<Database>, ...params: P) => Promise<Row[]> {
  const compiledFor = new WeakMap<Kysely<Database>, CompiledQuery<Row>>();
  return (db, ...params) => {
    let compiled = compiledFor.get(db);
    if (!compiled) {
      compiled = build(db, ...placeholders).compile();
      const inOrder = compiled.parameters.every((value, index) => value === placeholders[index]);
      if (compiled.parameters.length !== placeholders.length || !inOrder) {
        return Promise.reject(
          new Error(
            `A prepared query must take exactly its ${placeholders.length} placeholder parameter(s), in their order`,
          ),
        );
      }
      compiledFor.set(db, compiled);
    }
    const direct = directReaders.get(db)?.(compiled.sql, params);
    if (direct !== undefined) return Promise.resolve(direct as Row[]);
    return db.executeQuery<Row>({ ...compiled, parameters: params }).then(({ rows }) => rows);
  };
}
