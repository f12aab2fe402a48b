/**
 * The reads a reminder's dispatch makes with its loaders (src/modules/chases/dispatch-reads.ts: the
 * intakes with their suppressions, their items, files and plans, the chases), timed alone: this
 * process's CPU per call of the five side by side, for one intake and for two (the reminders of one
 * claim), on SQLite and, when it answers, PostgreSQL. With BENCH_STATEMENTS=1 (SQLite only) it prints
 * instead the time the same calls spend inside SQLite (bench/statements.ts, whose timing would weigh on
 * the CPU measured): the floor, what no code of the service's can lower. See bench/README.md, "The
 * dispatch's reads compiled once".
 *
 *   npx tsx bench/dispatch-reads.ts
 *   BENCH_DATABASES=sqlite BENCH_STATEMENTS=1 npx tsx bench/dispatch-reads.ts
 *
 * Environment: BENCH_DATABASES (default sqlite,postgres; PostgreSQL at TEST_POSTGRES_URL in a schema of
 * its own, dropped afterwards), BENCH_DISPATCH_READ_CALLS (timed calls per round; default 5,000 on SQLite
 * and 1,500 on PostgreSQL), BENCH_ROUNDS (default 4).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { destination } from 'pino';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { findChasesByIds, findPlansOf } from '../src/modules/chases/chases.repository.js';
import {
  filesByIntake,
  findIntakesWithSuppression,
  itemsByIntake,
} from '../src/modules/intakes/intakes.repository.js';
import { startServer } from '../src/server.js';
import { INTAKE_BODY } from './intake-body.js';
import { call, positiveNumberFromEnv, stringField, toError } from './load.js';
import { countStatements } from './statements.js';

const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim());
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_ROUNDS', 4));
/** Untimed calls before each timed run. */
const WARM_UP = 300;

async function measure(database: string): Promise<void> {
  const postgres = database === 'postgres';
  const schema = `bench_dispatch_reads_${process.pid}`;
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-dispatch-reads-'));
  const env: Record<string, string> = { PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  if (postgres) {
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('schema', schema);
    env.DATABASE_URL = url.toString();
    env.SECRET_KEY = 'bench-'.repeat(8);
  }
  const counter = !postgres && process.env.BENCH_STATEMENTS === '1' ? countStatements() : undefined;
  const service = await startServer(loadConfig(env), {
    logStream: destination({ dest: join(dataDir, 'service.log'), sync: false }),
    runWorker: false,
  });
  try {
    const db = service.services.db.kysely;
    const account = await createAccount(
      db,
      { email: 'bench@example.com', plan: 'agency', rateLimitPerHour: 100_000_000 },
      new Date().toISOString(),
    );
    // Two sent intakes, each with its first reminder planned (a chase and a plan).
    const intakeIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await call(
        {
          route: 'POST /v1/intakes',
          url: `${service.url}/v1/intakes`,
          method: 'POST',
          headers: { authorization: `Bearer ${account.live_key}`, 'content-type': 'application/json' },
          body: JSON.stringify(INTAKE_BODY),
        },
        201,
      );
      intakeIds.push(stringField(created, 'intake_id'));
    }
    const chaseIds = (
      await db.selectFrom('chases').select('id').where('intake_id', 'in', intakeIds).execute()
    ).map((row) => row.id);
    if (chaseIds.length < 2) throw new Error(`expected a chase for each intake, found ${chaseIds.length}`);
    const calls = Math.round(positiveNumberFromEnv('BENCH_DISPATCH_READ_CALLS', postgres ? 1_500 : 5_000));
    for (const count of [1, 2]) {
      const intakes = intakeIds.slice(0, count);
      const chases = chaseIds.slice(0, count);
      const reads = () =>
        Promise.all([
          findIntakesWithSuppression(db, intakes),
          itemsByIntake(db, intakes),
          filesByIntake(db, intakes),
          findPlansOf(db, intakes),
          findChasesByIds(db, chases),
        ]);
      const perCall: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < WARM_UP; i++) await reads();
        counter?.reset();
        const before = process.cpuUsage();
        for (let i = 0; i < calls; i++) await reads();
        const used = process.cpuUsage(before);
        perCall.push(counter ? counter.nanoseconds() / 1_000 / calls : (used.user + used.system) / calls);
      }
      const what = counter ? 'µs inside SQLite' : "µs of this process's CPU";
      process.stdout.write(
        `${database}, ${count} intake(s): the five reads side by side, ${what} per call (${ROUNDS} rounds of ${calls}): ${perCall.map((v) => v.toFixed(1)).join(', ')}\n`,
      );
    }
  } finally {
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
    if (postgres) {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
}

async function main(): Promise<void> {
  for (const database of DATABASES) {
    if (database !== 'sqlite' && database !== 'postgres')
      throw new Error(`BENCH_DATABASES: sqlite or postgres, not ${database}`);
    await measure(database);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
