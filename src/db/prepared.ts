import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * A query compiled once per database handle and then run with new parameters. For hot paths only:
 * building a Kysely query costs more than running a small indexed one on SQLite.
 * The builder must use its placeholder arguments as the query's only parameters (checked when compiled).
 */
export function preparedQuery<Row, P extends unknown[]>(
  build: (db: Kysely<Database>, ...placeholders: P) => Compilable<Row>,
  placeholders: P,
): (db: Kysely<Database>, ...params: P) => Promise<Row[]> {
  const compiledFor = new WeakMap<Kysely<Database>, CompiledQuery<Row>>();
  return async (db, ...params) => {
    let compiled = compiledFor.get(db);
    if (!compiled) {
      compiled = build(db, ...placeholders).compile();
      if (compiled.parameters.length !== placeholders.length) {
        throw new Error(
          `A prepared query must take exactly its ${placeholders.length} placeholder parameter(s)`,
        );
      }
      compiledFor.set(db, compiled);
    }
    const { rows } = await db.executeQuery<Row>({ ...compiled, parameters: params });
    return rows;
  };
}
