/**
 * What the hourly fold of the slots costs on PostgreSQL (bench/README.md, "Answers kept on PostgreSQL"):
 * BENCH_FOLD_ACCOUNTS accounts each with a count row and a version row in BENCH_FOLD_SLOTS slots besides
 * slot 0, then one fold (`foldSlots`, src/db/slot-fold.ts), timed; prints the rows folded, the time and
 * the rows after. Its own schema in TEST_POSTGRES_URL, dropped afterwards.
 *
 * Environment: TEST_POSTGRES_URL, BENCH_FOLD_ACCOUNTS (default 10,000; 1,000 with BENCH_QUICK=1),
 * BENCH_FOLD_SLOTS (default 10, at most 31).
 */
import { sql } from 'kysely';
import { migrateToLatest, openDatabase } from '../src/db/database.js';
import { foldSlots } from '../src/db/slot-fold.js';
import { positiveNumberFromEnv } from './load.js';
import { QUICK } from './result.js';
import { dropSchema, postgresReachable } from './processes.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ACCOUNTS = Math.round(positiveNumberFromEnv('BENCH_FOLD_ACCOUNTS', QUICK ? 1_000 : 10_000));
const SLOTS = Math.min(31, Math.round(positiveNumberFromEnv('BENCH_FOLD_SLOTS', 10)));

if (!(await postgresReachable(POSTGRES_URL)))
  throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL}`);
const schema = `bench_fold_${process.pid}`;
const url = new URL(POSTGRES_URL);
url.searchParams.set('schema', schema);
const db = openDatabase({ databaseUrl: url.toString(), dataDir: '' });
try {
  await migrateToLatest(db, url.toString());
  const rows = async (table: string) =>
    Number(
      (await sql<{ n: number }>`select count(*)::integer as n from ${sql.table(table)}`.execute(db.kysely))
        .rows[0]?.n,
    );
  // Slot 0 and SLOTS more for each account, in both tables.
  await sql`insert into intake_counts (account_id, livemode, status, slot, n)
    select 'acct_' || a, 1, 'sent', s, 1 from generate_series(1, ${ACCOUNTS}) a, generate_series(0, ${SLOTS}) s`.execute(
    db.kysely,
  );
  await sql`insert into answer_versions (account_id, slot, version)
    select 'acct_' || a, s, 3 from generate_series(1, ${ACCOUNTS}) a, generate_series(0, ${SLOTS}) s`.execute(
    db.kysely,
  );
  await sql`analyze intake_counts`.execute(db.kysely);
  await sql`analyze answer_versions`.execute(db.kysely);
  const before = { counts: await rows('intake_counts'), versions: await rows('answer_versions') };
  const started = performance.now();
  await foldSlots(db);
  const ms = performance.now() - started;
  const after = { counts: await rows('intake_counts'), versions: await rows('answer_versions') };
  const folded = before.counts - after.counts + before.versions - after.versions;
  console.log(
    `${ACCOUNTS} accounts, ${SLOTS} spare slots each: rows before ${before.counts} counts, ${before.versions} ` +
      `versions; one fold took ${ms.toFixed(0)} ms for ${folded} rows ` +
      `(${((folded / ms) * 1000).toFixed(0)} rows/s); rows after ${after.counts} counts, ${after.versions} versions`,
  );
} finally {
  await db.close();
  await dropSchema(POSTGRES_URL, schema);
}
