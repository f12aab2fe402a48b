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

/**
 * The steps of a plan (planOf's) that read the whole of one of `tables` or of one of its indexes:
 * SQLite's `SCAN <table>` (through an index or not); PostgreSQL's sequential scan, or an index scan
 * with no index condition, which is how a planner with sequential scans off reads a table no index
 * fits. An index scan's condition is on a line of its own below it, indented deeper.
 */
export function wholeReads(steps: readonly string[], tables: readonly string[]): string[] {
  const named = `(${tables.join('|')})`;
  const scan = new RegExp(`^SCAN ${named}\\b`);
  const sequential = new RegExp(`Seq Scan on ${named}\\b`);
  const byIndex = new RegExp(`Index (Only )?Scan (Backward )?using \\S+ on ${named}\\b`);
  const indent = (line: string) => line.length - line.trimStart().length;
  return steps.filter((step, at) => {
    if (scan.test(step) || sequential.test(step)) return true;
    if (!byIndex.test(step)) return false;
    const below = steps.slice(at + 1);
    const end = below.findIndex((line) => indent(line) <= indent(step) || /->/.test(line));
    return !(end === -1 ? below : below.slice(0, end)).some((line) => line.includes('Index Cond:'));
  });
}
