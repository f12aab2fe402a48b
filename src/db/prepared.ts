import type { Compilable, CompiledQuery, Insertable, Kysely } from 'kysely';
import { deferrable } from './deferred-writes.js';
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
 * A query compiled once per database (its handle and its transactions) and then run with new parameters. For hot paths only:
 * building a Kysely query costs more than running a small indexed one on SQLite. On SQLite, outside a
 * transaction, the compiled read runs directly on the connection (registerDirectReader).
 * The builder must use its placeholder arguments as the query's only parameters, in the order they
 * appear in the SQL (checked when compiled: give distinct placeholders so that the check can tell).
 */
export function preparedQuery<Row, P extends unknown[]>(
  build: (db: Kysely<Database>, ...placeholders: P) => Compilable<Row>,
  placeholders: P,
): (db: Kysely<Database>, ...params: P) => Promise<Row[]> {
  // Kept per dialect adapter: a database's transactions share its adapter, so a query compiled once
  // serves the root handle and every transaction (no handle here adds a plugin that rewrites queries).
  const compiledFor = new WeakMap<object, CompiledQuery<Row>>();
  return (db, ...params) => {
    const adapter = db.getExecutor().adapter;
    let compiled = compiledFor.get(adapter);
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
      compiledFor.set(adapter, compiled);
    }
    const direct = directReaders.get(db)?.(compiled.sql, params);
    if (direct !== undefined) return Promise.resolve(direct as Row[]);
    return db.executeQuery<Row>({ ...compiled, parameters: params }).then(({ rows }) => rows);
  };
}

/**
 * A read with fixed parameters and then a list of values (`where … in (…)`), compiled once per length
 * of the list (preparedQuery: on SQLite it runs directly on the connection). A list longer than
 * `maxValues` is read that many values at a time and the rows put together; an empty list reads
 * nothing. `build` must use the fixed parameters first, then the values in their order.
 */
export function preparedListQuery<Row, F extends unknown[]>(
  build: (db: Kysely<Database>, fixed: F, values: string[]) => Compilable<Row>,
  fixedPlaceholders: F,
  maxValues: number,
): (db: Kysely<Database>, fixed: F, values: readonly string[]) => Promise<Row[]> {
  const byLength = new Map<number, (db: Kysely<Database>, ...params: unknown[]) => Promise<Row[]>>();
  const compiledFor = (length: number) => {
    let prepared = byLength.get(length);
    if (!prepared) {
      const fixedCount = fixedPlaceholders.length;
      const placeholders = Array.from({ length }, (_, index) => `list value ${index}`);
      prepared = preparedQuery(
        (db: Kysely<Database>, ...params: unknown[]) =>
          build(db, params.slice(0, fixedCount) as F, params.slice(fixedCount) as string[]),
        [...fixedPlaceholders, ...placeholders],
      );
      byLength.set(length, prepared);
    }
    return prepared;
  };
  return async (db, fixed, values) => {
    const rows: Row[] = [];
    for (let start = 0; start < values.length; start += maxValues) {
      const part = values.slice(start, start + maxValues);
      rows.push(...(await compiledFor(part.length)(db, ...fixed, ...part)));
    }
    return rows;
  };
}

/**
 * An insert of up to `maxRows` rows into `table` with exactly `columns`, compiled once per row count
 * (preparedQuery). Rows with any other set of columns (one undefined or missing, one more), or more
 * rows than `maxRows`, go through Kysely's builder as before: a column left to its default is never
 * written as null, and no column given is dropped. `deferrable`: the insert may ride on the
 * transaction's next statement (deferred-writes.ts). `skipIfExists`: a unique column; a row whose
 * value is already there is left out (`on conflict (column) do nothing`).
 */
export function preparedInsert<T extends keyof Database>(
  table: T,
  columns: readonly (keyof Insertable<Database[T]> & string)[],
  options: { maxRows?: number; deferrable?: boolean; skipIfExists?: keyof Database[T] & string } = {},
): (db: Kysely<Database>, rows: readonly Insertable<Database[T]>[]) => Promise<void> {
  const maxRows = options.maxRows ?? 8;
  const unique = options.skipIfExists;
  const insert = (db: Kysely<Database>, rows: readonly Insertable<Database[T]>[]) => {
    const query = db.insertInto(table).values(rows);
    const guarded =
      unique === undefined ? query : query.onConflict((conflict) => conflict.column(unique).doNothing());
    return options.deferrable ? deferrable(guarded) : guarded;
  };
  const byCount = new Map<number, (db: Kysely<Database>, ...params: unknown[]) => Promise<unknown[]>>();
  const insertOf = (count: number) => {
    let prepared = byCount.get(count);
    if (!prepared) {
      const placeholders: unknown[] = Array.from({ length: count }, (_, row) =>
        columns.map((column) => `${table}.${column}.${row}`),
      ).flat();
      prepared = preparedQuery((db: Kysely<Database>, ...values: unknown[]) => {
        const rows = Array.from({ length: count }, (_, row) =>
          Object.fromEntries(columns.map((column, index) => [column, values[row * columns.length + index]])),
        );
        return insert(db, rows as never);
      }, placeholders);
      byCount.set(count, prepared);
    }
    return prepared;
  };
  return async (db, rows) => {
    if (rows.length === 0) return;
    const values = rows.flatMap((row) => columns.map((column) => (row as Record<string, unknown>)[column]));
    const exactly = (row: object) => Object.keys(row).length === columns.length;
    if (rows.length > maxRows || values.some((value) => value === undefined) || !rows.every(exactly)) {
      await insert(db, rows).execute();
      return;
    }
    await insertOf(rows.length)(db, ...values);
  };
}
