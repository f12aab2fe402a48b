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

/** Folds the slot rows of both tables into slot 0, a batch at a time (PostgreSQL; SQLite has one slot). */
export async function foldSlots(db: Db, batch = FOLD_BATCH): Promise<void> {
  if (db.dialect !== 'postgres') return;
  for (const fold of [foldCounts, foldVersions]) {
    for (let round = 0; round < MAX_BATCHES; round++) if ((await fold(db, batch)) < batch) break;
  }
}

/** Folds up to `batch` count rows; answers how many it took. */
async function foldCounts(db: Db, batch: number): Promise<number> {
  const { rows } = await sql<{ taken: number }>`with taken as (
      select account_id, livemode, status, slot from intake_counts where slot <> 0
      order by account_id, livemode, status, slot limit ${batch} for update skip locked),
    folded as (
      delete from intake_counts c using taken t
      where c.account_id = t.account_id and c.livemode = t.livemode and c.status = t.status and c.slot = t.slot
      returning c.account_id, c.livemode, c.status, c.n),
    kept as (
      insert into intake_counts (account_id, livemode, status, slot, n)
        select account_id, livemode, status, 0, sum(n) from folded group by account_id, livemode, status
        order by account_id, livemode, status
        on conflict (account_id, livemode, status, slot) do update set n = intake_counts.n + excluded.n)
    select count(*)::integer as taken from folded`.execute(db.kysely);
  return rows[0]?.taken ?? 0;
}

/** Folds up to `batch` version rows; answers how many it took. */
async function foldVersions(db: Db, batch: number): Promise<number> {
  const { rows } = await sql<{ taken: number }>`with taken as (
      select account_id, slot from answer_versions where slot <> 0
      order by account_id, slot limit ${batch} for update skip locked),
    folded as (
      delete from answer_versions v using taken t where v.account_id = t.account_id and v.slot = t.slot
      returning v.account_id, v.version),
    kept as (
      insert into answer_versions (account_id, slot, version)
        select account_id, 0, sum(version) from folded group by account_id order by account_id
        on conflict (account_id, slot) do update set version = answer_versions.version + excluded.version)
    select count(*)::integer as taken from folded`.execute(db.kysely);
  return rows[0]?.taken ?? 0;
}
