/**
 * Bulk rows for the benchmarks that measure costs against table size (bench:queries, the scale
 * bench): INSERT … SELECT over a generated series, one statement per table, so a million intakes
 * load in a minute or two instead of an hour of single inserts, with nothing held in this process.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../src/db/database.js';
import { DISPATCH_CHASE } from '../src/modules/chases/chases.jobs.js';

const BASE_EPOCH_S = 1_700_000_000;

export interface LoadOptions {
  /** The account that gets every tenth intake (the one a benchmark lists or reads). */
  bigAccount: string;
  livemode: boolean;
  /** Prefix of the ids (`in_<prefix>000000001`…), so that two loads into one database do not collide. */
  prefix?: string;
}

/**
 * Intakes numbered [from, to], each with two items, its creation's event and one reminder job due a
 * day from now (plus its number in ms); 10% to `bigAccount`, the rest spread over 997 others; one
 * intake in a hundred with an answer awaiting review, the big account's too. Then ANALYZE, as a
 * database that has lived a while has statistics.
 */
export async function loadIntakes(db: Db, from: number, to: number, options: LoadOptions): Promise<void> {
  const k = db.kysely;
  const postgres = db.dialect === 'postgres';
  const prefix = options.prefix ?? 'bench';
  const live = options.livemode ? 1 : 0;
  const series = postgres
    ? sql`generate_series(${from}::bigint, ${to}::bigint) as g(n)`
    : sql`(with recursive s(n) as (select ${from} union all select n + 1 from s where n < ${to}) select n from s) as g`;
  const pad = postgres ? sql`lpad(n::text, 9, '0')` : sql`printf('%09d', n)`;
  const iso = postgres
    ? sql`to_char(to_timestamp(${BASE_EPOCH_S} + n) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${BASE_EPOCH_S} + n, 'unixepoch')`;
  const concat = (...parts: RawBuilder<unknown>[]) => sql.join(parts, sql` || `);
  const intakeId = concat(sql`${`in_${prefix}`}`, pad);
  const account = sql`case when n % 10 = 0 then ${options.bigAccount} else ${concat(sql`'acct_'`, sql`(n % 997)`)} end`;
  await sql`
    insert into intakes (id, account_id, livemode, project_name, client_email, client_language, status,
      chase_schedule, retention_mode, retention_anonymize, created_at, updated_at)
    select ${intakeId}, ${account}, ${live}, ${concat(sql`'Project '`, pad)},
      ${concat(sql`'client'`, pad, sql`'@example.com'`)}, 'en',
      case n % 3 when 0 then 'sent' when 1 then 'in_progress' else 'completed' end,
      '{}', 'keep', 0, ${iso}, ${iso}
    from ${series}`.execute(k);
  for (const [position, key] of ['about', 'logo'].entries()) {
    await sql`
      insert into intake_items (intake_id, account_id, livemode, key, position, definition, status, created_at)
      select ${intakeId}, ${account}, ${live}, ${key}, ${position}, '{}', 'pending', ${iso}
      from ${series}`.execute(k);
  }
  // One intake in a hundred has an answer awaiting review: those numbered …37 (other accounts') and
  // …370 (the big account's).
  await sql`update intake_items set status = 'submitted'
    where key = 'about' and (intake_id like '%37' or intake_id like '%370') and status = 'pending'
      and intake_id >= ${`in_${prefix}${String(from).padStart(9, '0')}`}
      and intake_id <= ${`in_${prefix}${String(to).padStart(9, '0')}`}`.execute(k);
  // Its creation's event, as the outbox keeps it.
  await sql`
    insert into events (id, account_id, livemode, type, intake_id, payload, occurred_at)
    select ${concat(sql`${`evt_${prefix}`}`, pad)}, ${account}, ${live}, 'intake.created', ${intakeId}, '{}', ${iso}
    from ${series}`.execute(k);
  await sql`
    insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, created_at)
    select ${concat(sql`${`job_${prefix}`}`, pad)}, ${account}, ${live}, ${DISPATCH_CHASE.kind},
      ${concat(sql`${`ch_${prefix}`}`, pad)}, '{}', ${Date.now() + 86_400_000} + n, ${iso}
    from ${series}`.execute(k);
  await sql`analyze`.execute(k);
}
