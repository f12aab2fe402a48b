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
 * SQLite's `SCAN <table>` (through an index or not), or a search of an index with no column of it
 * constrained (no condition in brackets); PostgreSQL's sequential scan, or an index scan
 * whose condition (the line below it, indented deeper) leaves out the index's first column or is
 * missing: a walk of the whole index, which is how a planner with sequential scans off reads a table
 * no index fits (a condition on a later column alone is checked against every entry).
 */
export async function wholeReads(
  db: Kysely<Database>,
  database: DatabaseKind,
  steps: readonly string[],
  tables: readonly string[],
): Promise<string[]> {
  const named = `(${tables.join('|')})`;
  if (database === 'sqlite') {
    const whole = new RegExp(`^(SCAN ${named}\\b|SEARCH ${named} USING (COVERING )?INDEX \\S+$)`);
    return steps.filter((step) => whole.test(step));
  }
  const sequential = new RegExp(`Seq Scan on ${named}\\b`);
  const byIndex = /(?:Index (?:Only )?Scan (?:Backward )?using|Bitmap Index Scan on) (\S+)/;
  const indent = (line: string) => line.length - line.trimStart().length;
  const whole: string[] = [];
  for (const [at, step] of steps.entries()) {
    if (sequential.test(step)) whole.push(step);
    const index = byIndex.exec(step)?.[1];
    const indexed = index === undefined ? undefined : await indexedBy(db, index);
    if (indexed === undefined || !tables.includes(indexed.table)) continue;
    const below = steps.slice(at + 1);
    const end = below.findIndex((line) => indent(line) <= indent(step) || line.includes('->'));
    const condition = (end === -1 ? below : below.slice(0, end)).find((line) => line.includes('Index Cond:'));
    const first = indexed.column;
    if (condition === undefined || (first !== null && !new RegExp(`\\b${first}\\b`).test(condition))) {
      whole.push(condition === undefined ? step : `${step}\n${condition}`);
    }
  }
  return whole;
}

/**
 * The table of a PostgreSQL index (of the search path) and its first column (null for an expression).
 */
async function indexedBy(
  db: Kysely<Database>,
  index: string,
): Promise<{ table: string; column: string | null } | undefined> {
  const { rows } = await db.executeQuery<{ table: string; column: string | null }>(
    CompiledQuery.raw(
      `select t.relname as "table", a.attname as "column" from pg_index i
        join pg_class t on t.oid = i.indrelid
        left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
        where i.indexrelid = to_regclass($1)`,
      [index],
    ),
  );
  return rows[0];
}
