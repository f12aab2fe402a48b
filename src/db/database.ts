import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  close(): Promise<void>;
}

// int8 (bigint) as a JS number: our counters stay far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
}

/**
 * PostgreSQL when DATABASE_URL is set, else SQLite in DATA_DIR.
 * A `schema` query parameter on the PostgreSQL URL selects (and creates) a schema: each test run uses its own.
 */
export function openDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) return openPostgres(options.databaseUrl);
  mkdirSync(options.dataDir, { recursive: true });
  return openSqlite(join(options.dataDir, 'intake.sqlite'));
}

function openSqlite(file: string): Db {
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  const kysely = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(sqlite) }),
  });
  return { kysely, dialect: 'sqlite', close: () => kysely.destroy() };
}

/**
 * Kysely prepares every query anew; on SQLite, preparing costs as much as running a small query.
 * Prepared statements are kept per SQL text (Kysely's SQL is parameterised, so the set is small).
 */
function withStatementCache(sqlite: SQLite.Database, max = 1000): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string) {
      let statement = statements.get(sqlText);
      if (!statement) {
        statement = sqlite.prepare(sqlText);
        if (statements.size >= max) statements.clear();
        statements.set(sqlText, statement);
      }
      return statement;
    },
  };
}

function openPostgres(databaseUrl: string): Db {
  const url = new URL(databaseUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error('The schema parameter of DATABASE_URL must be a lower-case SQL identifier.');
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: 10,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    dialect: 'postgres',
    close: () => kysely.destroy(),
  };
}

/** Applies pending migrations; safe to run from several processes at once (Kysely takes a lock). */
export async function migrateToLatest(db: Db, databaseUrl?: string): Promise<string[]> {
  const schema =
    db.dialect === 'postgres' && databaseUrl ? new URL(databaseUrl).searchParams.get('schema') : null;
  if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db.kysely);
  // The migrator's own tables in that schema too: otherwise it finds another schema's and skips creating its own.
  const migrator = new Migrator({
    db: db.kysely,
    provider: migrationProvider,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error('Database migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
