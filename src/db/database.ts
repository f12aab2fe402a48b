import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import { migrationProvider } from './migrations/index.js';
import { SearchPathPostgresDialect } from './pg-introspector.js';
import { pgModule } from './pg-module.js';
import { withNamedStatements } from './pg-named-statements.js';
import { registerDirectReader } from './prepared.js';
import type { Database } from './schema.js';
import { ensurePrivateDirectory, ensurePrivateFile } from '../lib/private-files.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /**
   * A number that changes whenever any connection, in this process or another, commits a change to the
   * database. It is read at most once per turn of the event loop: a request that arrives after another
   * request's answer (whose commit came before that answer) always sees the new number. Only where the
   * engine offers one (SQLite's `PRAGMA data_version`); caches of rows are safe only where it exists.
   */
  changeVersion?: () => number;
  /** Runs a migration: on PostgreSQL, with no statement prepared across it (see pg-named-statements.ts). */
  whileMigrating?: <T>(task: () => Promise<T>) => Promise<T>;
  /** Connections of the pool now (metrics): open, idle, and queries waiting for one. */
  poolUse(): { max: number; total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  /** Told what an operator should know about the connection (PostgreSQL only). */
  warn?: (message: string) => void;
}

/**
 * PostgreSQL when DATABASE_URL is set, else SQLite in DATA_DIR.
 * A `schema` query parameter on the PostgreSQL URL selects (and creates) a schema: each test run uses its own.
 */
export function openDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.warn);
  ensurePrivateDirectory(options.dataDir);
  const file = join(options.dataDir, 'intake.sqlite');
  ensurePrivateFile(file);
  return openSqlite(file);
}

function openSqlite(file: string): Db {
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  const statements = withStatementCache(sqlite);
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: statements }) });
  // Prepared reads run directly while no transaction is open on the connection: a read between the
  // statements of a transaction must wait for it (Kysely's lock), or it would see uncommitted rows.
  // Reads only: a write that returns rows (`returning`) goes through Kysely like any other write.
  registerDirectReader(kysely, (sqlText, parameters) => {
    if (sqlite.inTransaction) return undefined;
    const statement = statements.prepare(sqlText);
    return statement.reader && statement.readonly ? statement.all(parameters) : undefined;
  });
  // data_version changes for every commit made by *another* connection: a second connection that never
  // writes therefore sees every commit, this process's own included.
  const watcher = new SQLite(file);
  const dataVersion = watcher.prepare('PRAGMA data_version').pluck();
  let versionThisTurn: number | undefined;
  const changeVersion = (): number => {
    if (versionThisTurn === undefined) {
      versionThisTurn = dataVersion.get() as number;
      setImmediate(() => {
        versionThisTurn = undefined;
      });
    }
    return versionThisTurn;
  };
  return {
    kysely,
    dialect: 'sqlite',
    changeVersion,
    // One connection, used synchronously: never idle-waiting, never queued.
    poolUse: () => ({ max: 1, total: 1, idle: 0, waiting: 0 }),
    close: async () => {
      await kysely.destroy();
      watcher.close();
    },
  };
}

/**
 * Kysely prepares every query anew; on SQLite, preparing costs as much as running a small query.
 * Prepared statements are kept per SQL text (Kysely's SQL is parameterised, so the set is small).
 */
function withStatementCache(
  sqlite: SQLite.Database,
  max = 1000,
): Omit<SqliteDatabase, 'prepare'> & { prepare(sqlText: string): SQLite.Statement } {
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

function openPostgres(databaseUrl: string, warn?: (message: string) => void): Db {
  const url = new URL(databaseUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error('The schema parameter of DATABASE_URL must be a lower-case SQL identifier.');
  }
  // A pooler that does not keep prepared statements per client (PgBouncer's transaction mode before
  // 1.21, or without max_prepared_statements) needs every statement unnamed.
  const prepared = url.searchParams.get('prepared_statements');
  url.searchParams.delete('prepared_statements');
  if (prepared !== null && prepared !== 'true' && prepared !== 'false') {
    throw new Error('The prepared_statements parameter of DATABASE_URL must be true or false.');
  }
  const max = 10;
  const pg = pgModule();
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max,
    // A database that stops answering (no refusal, no reset) fails requests instead of hanging them.
    connectionTimeoutMillis: 10_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle connection the server dropped (restart, failover, network cut) is an 'error' on the pool;
  // unheard it would crash the process. pg discards that client, the next query opens a new one, and
  // queries that were running fail on their own (500 internal_error, readiness 503).
  pool.on('error', () => undefined);
  // The same for a connection dropped while checked out between two queries (inside a transaction):
  // its 'error' would have no listener; the next query fails instead, and the pool discards it.
  pool.on('connect', (connection) => connection.on('error', () => undefined));
  // Its introspection (the migrator's) reads only this installation's schemas: see pg-introspector.ts.
  const named = withNamedStatements(pool, {
    pg,
    enabled: prepared !== 'false',
    onPooledAway: (error) =>
      warn?.(
        `PostgreSQL answered "${error.message}": the connection goes through a pooler that does not keep ` +
          'prepared statements, so this process now sends every statement unnamed. Add ' +
          'prepared_statements=false to DATABASE_URL to start that way.',
      ),
  });
  const kysely = new Kysely<Database>({ dialect: new SearchPathPostgresDialect({ pool: named }) });
  return {
    kysely,
    dialect: 'postgres',
    whileMigrating: (task) => named.unnamedWhile(task),
    poolUse: () => ({ max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
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
  const { error, results } = await (db.whileMigrating
    ? db.whileMigrating(() => migrator.migrateToLatest())
    : migrator.migrateToLatest());
  if (error) throw error instanceof Error ? error : new Error('Database migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
