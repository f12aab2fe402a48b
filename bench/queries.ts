/**
 * Query cost growth (see bench/README.md, "Scale-out"): the time of the list, status and due-job
 * queries as the intakes table grows to 10k, 100k and 1M rows, on SQLite and PostgreSQL, with each
 * query's plan (EXPLAIN) to show which index it uses. Rows are bulk-inserted straight into the
 * migrated schema (INSERT … SELECT over a generated series), not through the API: this measures the
 * queries, not the writes.
 *
 * The data: 10% of the intakes belong to one large account (the listed one), the rest spread over
 * 997 accounts; two items and one future reminder job per intake, one intake in a hundred with an
 * answer awaiting review; 50 jobs due now.
 *
 * Environment: BENCH_QUERY_SIZES (default 10000,100000,1000000), BENCH_QUERY_BUDGET_SECONDS (default
 * 240: a size whose load would not fit in what is left is skipped and reported), TEST_POSTGRES_URL
 * (default postgres://postgres@127.0.0.1:5432/test; PostgreSQL is skipped when unreachable).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import pg from 'pg';
import { migrateToLatest, openDatabase, type Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { DISPATCH_CHASE } from '../src/modules/chases/chases.jobs.js';
import { AUTO_APPROVE, RETENTION_PURGE } from '../src/modules/intakes/intakes.jobs.js';
import { DELIVER_MESSAGE } from '../src/modules/notify/notify.jobs.js';
import { WEBHOOK_ATTEMPT } from '../src/modules/webhooks/webhooks.jobs.js';
import { loadIntakes } from './bulk.js';
import { postgresReachable } from './processes.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SIZES = (process.env.BENCH_QUERY_SIZES ?? '10000,100000,1000000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const BUDGET_MS = Number(process.env.BENCH_QUERY_BUDGET_SECONDS ?? 240) * 1000;
const BIG_ACCOUNT = 'acct_big';
const NOW_MS = Date.now();
/** The production kinds the worker claims (src/jobs/registry.ts). */
const KINDS = [DISPATCH_CHASE, DELIVER_MESSAGE, WEBHOOK_ATTEMPT, AUTO_APPROVE, RETENTION_PURGE].map(
  (d) => d.kind,
);

interface Timing {
  medianMs: number;
  p99Ms: number;
  runs: number;
}

/** Times a query: repeated until 300 runs or 2 seconds, whichever first; median and p99. */
async function time(run: () => Promise<unknown>): Promise<Timing> {
  const samples: number[] = [];
  const until = performance.now() + 2_000;
  await run();
  while (samples.length < 300 && (samples.length < 5 || performance.now() < until)) {
    const started = performance.now();
    await run();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? 0;
  return { medianMs: at(0.5), p99Ms: at(0.99), runs: samples.length };
}

/**
 * The list endpoint's queries (its `total` as kept by the intakes' triggers, and as counted, which a
 * list filtered by client, folder or text still does; then the first page), the status read and the claim.
 */
function queries(db: Kysely<Database>) {
  const listBase = db.selectFrom('intakes').where('account_id', '=', BIG_ACCOUNT).where('livemode', '=', 1);
  return {
    'list: kept total (intake_counts)': () =>
      db
        .selectFrom('intake_counts')
        .where('account_id', '=', BIG_ACCOUNT)
        .where('livemode', '=', 1)
        .select((eb) => eb.fn.sum<number>('n').as('n')),
    'list: count (total)': () => listBase.select((eb) => eb.fn.countAll<number>().as('n')),
    'list: first page of 20': () =>
      listBase.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(20).offset(0),
    // The dashboard's list: intakes with answers awaiting review first (two index walks, see
    // intakes.repository.ts listIntakes): by each intake's kept count, the partial index of those above
    // zero (migration 0046) for the first, the list's index for the rest.
    'review first: count awaiting': () =>
      listBase.where('awaiting_review', '>', sql.lit(0)).select((eb) => eb.fn.countAll<number>().as('n')),
    'review first: awaiting page': () =>
      listBase
        .where('awaiting_review', '>', sql.lit(0))
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(20),
    'review first: rest page': () =>
      listBase
        .where('awaiting_review', '<=', sql.lit(0))
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(20),
    'status: intake by id': (probe: string) =>
      db
        .selectFrom('intakes')
        .selectAll()
        .where('id', '=', probe)
        .where('account_id', '=', BIG_ACCOUNT)
        .where('livemode', '=', 1),
    'status: its items': (probe: string) =>
      db.selectFrom('intake_items').selectAll().where('intake_id', '=', probe).orderBy('position'),
    'due jobs: claim scan': () =>
      db
        .selectFrom('jobs')
        .select('id')
        .where('due_at', '<=', NOW_MS)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', NOW_MS)]))
        .where('kind', 'in', KINDS)
        .orderBy('due_at')
        .orderBy('id')
        .limit(20),
  };
}

type Dialect = 'sqlite' | 'postgres';

async function explain(db: Db, query: { compile(): { sql: string; parameters: readonly unknown[] } }) {
  const compiled = query.compile();
  const prefix = db.dialect === 'postgres' ? 'explain ' : 'explain query plan ';
  const result = await db.kysely.executeQuery<Record<string, unknown>>(
    CompiledQuery.raw(prefix + compiled.sql, [...compiled.parameters]),
  );
  return result.rows
    .map((row) => String(db.dialect === 'postgres' ? row['QUERY PLAN'] : row.detail))
    .join(' / ');
}

interface SizeResult {
  dialect: Dialect;
  intakes: number;
  loadSeconds: number;
  timings: Record<string, Timing>;
  plans: Record<string, string>;
}

async function openFresh(dialect: Dialect): Promise<{ db: Db; cleanup(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dataDir = await mkdtemp(join(tmpdir(), 'bench-queries-'));
    const db = openDatabase({ databaseUrl: undefined, dataDir });
    await migrateToLatest(db);
    return {
      db,
      async cleanup() {
        await db.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  }
  const schema = `bench_q_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const db = openDatabase({ databaseUrl: url.toString(), dataDir: tmpdir() });
  await migrateToLatest(db, url.toString());
  return {
    db,
    async cleanup() {
      await db.close();
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}

async function benchDialect(dialect: Dialect, deadline: number): Promise<SizeResult[]> {
  const fresh = await openFresh(dialect);
  const db = fresh.db;
  const results: SizeResult[] = [];
  let loaded = 0;
  let rowsPerSecond = 0;
  try {
    for (const size of SIZES) {
      const rows = size - loaded;
      const left = deadline - performance.now();
      if (rowsPerSecond > 0 && (rows / rowsPerSecond) * 1000 > left * 0.8) {
        process.stderr.write(
          `${dialect}: skipping ${size} intakes (loading ${rows} more rows at ${Math.round(rowsPerSecond)}/s would exceed the budget)\n`,
        );
        break;
      }
      process.stderr.write(`${dialect}: loading to ${size} intakes … `);
      const started = performance.now();
      await loadIntakes(db, loaded + 1, size, { bigAccount: BIG_ACCOUNT, livemode: true });
      const seconds = (performance.now() - started) / 1000;
      rowsPerSecond = rows / seconds;
      loaded = size;
      process.stderr.write(`${seconds.toFixed(1)} s; timing … `);
      const probe = `in_bench${String(Math.floor(size / 20) * 10).padStart(9, '0')}`;
      const timings: Record<string, Timing> = {};
      const plans: Record<string, string> = {};
      for (const [name, build] of Object.entries(queries(db.kysely))) {
        const query = build(probe);
        plans[name] = await explain(db, query);
        timings[name] = await time(() => query.execute());
      }
      process.stderr.write('done\n');
      results.push({ dialect, intakes: size, loadSeconds: seconds, timings, plans });
    }
  } finally {
    await fresh.cleanup();
  }
  return results;
}

function report(results: SizeResult[]): string {
  const names = Object.keys(results[0]?.timings ?? {});
  const lines: string[] = [];
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const mine = results.filter((r) => r.dialect === dialect);
    const base = mine[0];
    const last = mine[mine.length - 1];
    if (!base || !last) continue;
    const median = (r: SizeResult, name: string) => r.timings[name]?.medianMs ?? Number.NaN;
    lines.push(`\n### ${dialect}\n`);
    lines.push(
      `| query | ${mine.map((r) => `${r.intakes.toLocaleString('en')} intakes: median / p99 ms`).join(' | ')} | growth (median, largest ÷ smallest) |`,
    );
    lines.push(`|---|${mine.map(() => '---|').join('')}---|`);
    for (const name of names) {
      const cells = mine.map(
        (r) => `${median(r, name).toFixed(3)} / ${(r.timings[name]?.p99Ms ?? Number.NaN).toFixed(3)}`,
      );
      const growth = median(last, name) / Math.max(median(base, name), 1e-6);
      lines.push(`| ${name} | ${cells.join(' | ')} | ${growth.toFixed(1)}× |`);
    }
    lines.push(
      `\nLoad time: ${mine.map((r) => `${r.intakes.toLocaleString('en')}: ${r.loadSeconds.toFixed(1)} s`).join(', ')} (cumulative rows).`,
    );
    lines.push(`\nPlans at ${last.intakes.toLocaleString('en')} intakes:\n`);
    for (const name of names) lines.push(`- ${name}: \`${last.plans[name]}\``);
  }
  return lines.join('\n');
}

const deadline = performance.now() + BUDGET_MS;
const dialects: Dialect[] = (await postgresReachable(POSTGRES_URL)) ? ['sqlite', 'postgres'] : ['sqlite'];
if (!dialects.includes('postgres')) process.stderr.write('PostgreSQL unreachable: SQLite only.\n');
const all: SizeResult[] = [];
for (const dialect of dialects) {
  // Each dialect gets its share of what is left of the budget.
  const share =
    performance.now() + (deadline - performance.now()) / (dialects.length - dialects.indexOf(dialect));
  all.push(...(await benchDialect(dialect, share)));
}
console.log(report(all));
console.log('\n```json\n' + JSON.stringify(all.map(({ plans: _plans, ...rest }) => rest)) + '\n```');
