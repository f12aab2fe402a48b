/**
 * What the account versions' triggers cost a creation on PostgreSQL (bench/README.md, "Answers kept on
 * PostgreSQL"): one API server in this process (no worker), intakes created over HTTP with a test key,
 * BENCH_TRIGGERS_IN_FLIGHT at a time, BENCH_TRIGGERS_CREATIONS per round, with the triggers of migration
 * 0042 enabled and disabled (`alter table … disable trigger`) in alternating rounds. Prints each round's
 * creations per second and the medians; the ratio (with ÷ without) as a BENCH_RESULT line.
 *
 * Environment: TEST_POSTGRES_URL, BENCH_TRIGGERS_ROUNDS (default 4; 1 with BENCH_QUICK=1),
 * BENCH_TRIGGERS_CREATIONS (default 600; 100 quick), BENCH_TRIGGERS_IN_FLIGHT (default 8).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { POSTGRES_ANSWER_TABLES } from '../src/db/migrations/0042_answer_versions_postgres.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer } from '../src/server.js';
import { SMALL_INTAKE_BODY } from './intake-body.js';
import { positiveNumberFromEnv } from './load.js';
import { alternatingRounds, printRatio, QUICK } from './result.js';
import { dropSchema, postgresReachable } from './processes.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_TRIGGERS_ROUNDS', QUICK ? 1 : 4));
const CREATIONS = Math.round(positiveNumberFromEnv('BENCH_TRIGGERS_CREATIONS', QUICK ? 100 : 600));
const IN_FLIGHT = Math.round(positiveNumberFromEnv('BENCH_TRIGGERS_IN_FLIGHT', 8));

const BODY = JSON.stringify(SMALL_INTAKE_BODY);

if (!(await postgresReachable(POSTGRES_URL)))
  throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL}`);
const schema = `bench_triggers_${process.pid}`;
const dataDir = await mkdtemp(join(tmpdir(), 'bench-triggers-'));
const url = new URL(POSTGRES_URL);
url.searchParams.set('schema', schema);
const server = await startServer(
  loadConfig({ PORT: '0', DATA_DIR: dataDir, DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' }),
  { runWorker: false },
);
try {
  const kysely = server.services.db.kysely;
  const account = await createAccount(
    kysely,
    { email: 'bench@example.com', plan: 'agency', rateLimitPerHour: 1_000_000_000 },
    new Date().toISOString(),
  );
  const headers = { authorization: `Bearer ${account.test_key}`, 'content-type': 'application/json' };

  /** Creations per second, `count` of them with `IN_FLIGHT` at a time. */
  const create = async (count: number): Promise<number> => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next++ < count) {
          const response = await fetch(`${server.url}/v1/intakes`, { method: 'POST', headers, body: BODY });
          if (response.status !== 201)
            throw new Error(`create answered ${response.status}: ${await response.text()}`);
          await response.arrayBuffer();
        }
      }),
    );
    return count / ((performance.now() - started) / 1000);
  };

  // The tables with the triggers of migration 0042 (the intakes' counts have none on PostgreSQL).
  const tables = Object.keys(POSTGRES_ANSWER_TABLES);
  const setTriggers = async (enabled: boolean) => {
    for (const table of tables) {
      for (const event of ['insert', 'update', 'delete']) {
        await sql`alter table ${sql.table(table)} ${sql.raw(enabled ? 'enable' : 'disable')}
          trigger ${sql.raw(`${table}_answers_${event}`)}`.execute(kysely);
      }
    }
  };

  await create(Math.min(200, CREATIONS)); // warm-up
  const rounds = await alternatingRounds({
    small: false,
    large: true,
    names: ['creation'] as const,
    rounds: ROUNDS,
    rateOf: async (_name, enabled) => {
      await setTriggers(enabled);
      return create(CREATIONS);
    },
    onRound: (_name, round, entry) =>
      console.log(
        `round ${round + 1}: ${entry.service.toFixed(0)} creations/s with the triggers, ` +
          `${entry.baseline.toFixed(0)} without`,
      ),
  });
  await setTriggers(true);
  printRatio({
    name: 'POST /v1/intakes with the answer-version triggers ÷ without (PostgreSQL)',
    goal: '>=0.9',
    baseline: 'the same creations with the triggers disabled',
    rounds: rounds.get('creation') ?? [],
  });
} finally {
  await server.stop();
  await dropSchema(POSTGRES_URL, schema);
  await rm(dataDir, { recursive: true, force: true });
}
