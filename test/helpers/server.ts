import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RawBuilder } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { createAccount, type CreatedAccount } from '../../src/modules/accounts/accounts.service.js';
import type { World } from '../../src/kernel/world.js';
import { startServer, type RunningServer, type StartServerOptions } from '../../src/server.js';
import { TEST_POSTGRES_URL, type DatabaseKind } from './env.js';

export interface TestServer {
  url: string;
  server: RunningServer;
  dataDir: string;
  /** Environment that points another process (the CLI) at this server's database. */
  env: Record<string, string>;
  createAccount(options?: {
    plan?: 'free' | 'solo' | 'agency';
    rateLimitPerHour?: number;
  }): Promise<CreatedAccount>;
  stop(): Promise<void>;
}

let counter = 0;

/** A fresh PostgreSQL schema per server, so test files and runs never see each other's rows. */
function freshSchemaUrl(): { url: string; schema: string } {
  const schema = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return { url: url.toString(), schema };
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

export async function startTestServer(
  database: DatabaseKind,
  extraEnv: Record<string, string> = {},
  options: StartServerOptions = {},
): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-test-'));
  const pgTarget = database === 'postgres' ? freshSchemaUrl() : undefined;
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(pgTarget ? { DATABASE_URL: pgTarget.url } : {}),
    ...extraEnv,
  };
  const config = loadConfig({ PORT: '0', ...env });
  const server = await startServer(config, options);
  const url = server.url;
  return {
    url,
    server,
    dataDir,
    env,
    createAccount: async (options = {}) =>
      createAccount(
        server.services.db.kysely,
        {
          email: `owner-${Math.random().toString(36).slice(2)}@example.com`,
          plan: options.plan ?? 'agency',
          rateLimitPerHour: options.rateLimitPerHour,
        },
        new Date().toISOString(),
      ),
    async stop() {
      await server.stop();
      if (pgTarget) await dropSchema(pgTarget.schema);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A migrated database without a server, for repository-level tests. */
export async function openTestDatabase(database: DatabaseKind) {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-db-'));
  const pgTarget = database === 'postgres' ? freshSchemaUrl() : undefined;
  const db = openDatabase({ databaseUrl: pgTarget?.url, dataDir });
  await migrateToLatest(db, pgTarget?.url);
  return {
    db,
    /** Environment that points a service process at this database. */
    env: { DATA_DIR: dataDir, ...(pgTarget ? { DATABASE_URL: pgTarget.url } : {}) } as Record<string, string>,
    async close() {
      await db.close();
      if (pgTarget) await dropSchema(pgTarget.schema);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `statement` on a connection of its own to the server's database, opened and closed around it, as
 * another process or a person at the database's prompt would.
 */
export async function fromAnotherConnection(
  server: TestServer,
  statement: RawBuilder<unknown>,
): Promise<void> {
  const outside = openDatabase({ databaseUrl: server.env.DATABASE_URL, dataDir: server.dataDir });
  try {
    await statement.execute(outside.kysely);
  } finally {
    await outside.close();
  }
}

/**
 * A PostgreSQL connection of its own on the database of `databaseUrl` (its `schema` as the search path),
 * for a test that holds a transaction open across statements, which the service's pool does not give.
 * The caller ends it.
 */
export async function connectToPostgres(databaseUrl: string | undefined): Promise<pg.Client> {
  const url = new URL(databaseUrl ?? '');
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  const connection = new pg.Client({
    connectionString: url.toString(),
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  await connection.connect();
  return connection;
}

/**
 * Resolves once some transaction waits for a lock on `table` (an ungranted lock in `pg_locks`, read
 * through `connection`), so a test acts on a wait it has seen rather than after a guessed delay; throws
 * `never` after 10 s.
 */
export async function untilWaitingOnLock(connection: pg.Client, table: string, never: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await connection.query<{ n: number }>(
      'select count(*)::int as n from pg_locks where not granted and relation = $1::regclass',
      [table],
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error(never);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets the event loop turn once (past this turn's reads and the writes gathered in it). */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** An account's world as the system acts in it (no key, no person), on the server's clock. */
export function systemWorld(server: TestServer, accountId: string, livemode = true): World {
  return {
    accountId,
    livemode,
    clock: server.server.services.clock,
    offsetMs: 0,
    actor: { type: 'system', id: null },
  };
}
