import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { DatabaseKind } from './env.js';
import type { Statement } from './statements.js';

/** Plans made so far: each prepared statement is named by its number. */
let plans = 0;

/**
 * How the database plans a statement (recorded, or compiled) with its values: its steps, one a line.
 * On PostgreSQL the statement is planned as a repeated one is (generic: the values unknown), with
 * sequential scans off: a test's tables are small enough to read whole, and the question is which
 * index the planner would take.
 */
export async function planOf(
  db: Kysely<Database>,
  database: DatabaseKind,
  statement: Pick<Statement, 'sql' | 'values'>,
): Promise<string[]> {
  if (database === 'sqlite') {
    const plan = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.values]),
    );
    return plan.rows.map((row) => row.detail);
  }
  const literal = (value: unknown): string => {
    if (value === null) return 'null';
    if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
      return String(value);
    }
    if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
    throw new Error(`planOf: no SQL literal for a ${typeof value}`);
  };
  // A prepared statement outlives a failed transaction: each plan gets a name of its own.
  const name = `planned_${++plans}`;
  return db.transaction().execute(async (trx) => {
    await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
    await trx.executeQuery(CompiledQuery.raw('set local plan_cache_mode = force_generic_plan'));
    await trx.executeQuery(CompiledQuery.raw(`prepare ${name} as ${statement.sql}`));
    const plan = await trx.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain execute ${name}(${statement.values.map(literal).join(', ')})`),
    );
    await trx.executeQuery(CompiledQuery.raw(`deallocate ${name}`));
    return plan.rows.map((row) => row['QUERY PLAN']);
  });
}
