import { sql } from 'kysely';
import type { Db } from './database.js';

/**
 * On PostgreSQL the intakes' counts (migration 0041) and the account versions (0042) are spread over
 * slots, one per writing connection's server process, so that writers of one account do not wait for
 * each other; each count or version is the sum of its slots' rows. Left alone, a busy account keeps up
 * to 32 rows of each. A recurring job (`fold_slots`, src/job-handlers.ts) folds every slot's row into
 * slot 0, keeping each sum as it was, so the tables hold about one row per count and account again; a
 * busy account's writers make new slot rows until the next fold.
 *
 * Rows that a transaction holds are skipped (`for update skip locked`), so the fold never waits for a
 * writer; a writer that wants a row the fold took waits for the fold's commit. The fold waits only for
 * a slot-0 row, whose writer never wants another slot's row (a connection writes one slot): no deadlock.
 * Neither table has triggers on PostgreSQL, so the fold writes nothing else, and since no count or
 * version sum changes, no kept answer is dropped.
 */

/** Rows folded per statement: one statement a table and batch, so one fold holds its locks briefly. */
const FOLD_BATCH = 10_000;
/** Statements a table at most per run: a backlog larger than this many batches waits for the next run. */
const MAX_BATCHES = 100;

/** A table of sums spread over slots: the columns that name a sum, and the column that holds it. */
interface SlottedTable {
  table: 'intake_counts' | 'answer_versions';
  keys: readonly string[];
  sum: string;
}

const SLOTTED: readonly SlottedTable[] = [
  { table: 'intake_counts', keys: ['account_id', 'livemode', 'status'], sum: 'n' },
  { table: 'answer_versions', keys: ['account_id'], sum: 'version' },
];

/** Folds the slot rows of both tables into slot 0, a batch at a time (PostgreSQL; SQLite has one slot). */
export async function foldSlots(db: Db, batch = FOLD_BATCH): Promise<void> {
  if (db.dialect !== 'postgres') return;
  for (const slotted of SLOTTED) {
    for (let round = 0; round < MAX_BATCHES; round++)
      if ((await foldBatch(db, slotted, batch)) < batch) break;
  }
}

/**
 * Folds up to `batch` rows of one table: takes them (in key order, past rows a transaction holds),
 * deletes them and adds their sums to slot 0's rows. Answers how many it took.
 */
async function foldBatch(db: Db, { table, keys, sum }: SlottedTable, batch: number): Promise<number> {
  const columns = (prefix: string) => sql.join(keys.map((key) => sql.ref(`${prefix}${key}`)));
  const sameRow = sql.join(
    [...keys, 'slot'].map((key) => sql`${sql.ref(`c.${key}`)} = ${sql.ref(`t.${key}`)}`),
    sql` and `,
  );
  const { rows } = await sql<{ taken: number }>`with taken as (
      select ${columns('')}, slot from ${sql.table(table)} where slot <> 0
      order by ${columns('')}, slot limit ${batch} for update skip locked),
    folded as (
      delete from ${sql.table(table)} c using taken t where ${sameRow}
      returning ${columns('c.')}, ${sql.ref(`c.${sum}`)}),
    kept as (
      insert into ${sql.table(table)} (${columns('')}, slot, ${sql.ref(sum)})
        select ${columns('')}, 0, sum(${sql.ref(sum)}) from folded group by ${columns('')}
        order by ${columns('')}
        on conflict (${columns('')}, slot)
        do update set ${sql.ref(sum)} = ${sql.ref(`${table}.${sum}`)} + ${sql.ref(`excluded.${sum}`)})
    select count(*)::integer as taken from folded`.execute(db.kysely);
  return rows[0]?.taken ?? 0;
}
