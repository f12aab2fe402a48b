import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  SqliteDialect,
  sql,
  type CompiledQuery,
  type RawBuilder,
  type SqliteDatabase,
} from 'kysely';
import { migrationProvider } from './migrations/index.js';
import { SearchPathPostgresDialect } from './pg-introspector.js';
import { pgModule } from './pg-module.js';
import { withNamedStatements } from './pg-named-statements.js';
import { registerDirectReader } from './prepared.js';
import type { Database } from './schema.js';
import { readsAside } from './sqlite-aside.js';
import { checkpointInBackground, INLINE_CHECKPOINT_PAGES } from './sqlite-checkpoints.js';
import { KeptLately } from '../lib/kept-lately.js';
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
  /**
   * A number that changes whenever a commit changes a row of this account that a kept answer may read
   * (its intakes, items, keys, settings…; not its jobs, deliveries or logs), read in the snapshot the
   * reads of this turn see. Where the engine offers a change version only (SQLite); undefined while a
   * transaction holds the connection, when it cannot be read at once.
   */
  answerVersion?: (accountId: string) => number | undefined;
  /**
   * Names the snapshot the direct reads of this turn see now (opening it if need be): rows and account
   * versions read under one name come from one snapshot. Undefined while a transaction holds the
   * connection. Where answerVersion is.
   */
  readSnapshot?: () => number | undefined;
  /**
   * Where there is no change version (PostgreSQL): reads, in one statement, a number that changes
   * whenever a commit changes a row of this account that a kept answer may read (as answerVersion).
   */
  readAnswerVersion?: (accountId: string) => Promise<number>;
  /**
   * Runs a read that scans much of a table off the event loop, where the database runs in the process
   * (SQLite: on a thread with a connection of its own, sqlite-aside.ts). Elsewhere the read is a query
   * like any other: PostgreSQL runs it in its own process.
   */
  readAside<R>(query: CompiledQuery<R>): Promise<R[]>;
  /** Runs a migration: on PostgreSQL, with no statement prepared across it (see pg-named-statements.ts). */
  whileMigrating?: <T>(task: () => Promise<T>) => Promise<T>;
  /** Connections of the pool now (metrics): open, idle, and queries waiting for one. */
  poolUse(): { max: number; total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  /** Told what an operator should know: about the connection (PostgreSQL), its checkpoints (SQLite). */
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
  return openSqlite(file, options.warn ?? ((message) => process.emitWarning(message)));
}

function openSqlite(file: string, warn: (message: string) => void): Db {
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Checkpoints run on a thread of their own (below); a commit checkpoints only a log that has grown long.
  sqlite.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_PAGES}`);
  // data_version changes for every commit made by *another* connection: a second connection that never
  // writes therefore sees every commit, this process's own included.
  const watcher = new SQLite(file);
  const dataVersion = watcher.prepare('PRAGMA data_version').pluck();
  const openedAt = dataVersion.get() as number;
  const checkpoints = checkpointInBackground(file, () => dataVersion.get() !== openedAt, warn);
  const turn = readsOfATurn(sqlite, () => dataVersion.get() as number);
  const aside = readsAside(file);
  // Any statement of Kysely's (a write, a transaction's begin) first ends the turn's read transaction.
  const statements = withStatementCache(sqlite, turn.endReads);
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: statements }) });
  // Prepared reads run directly while no transaction of Kysely's is open on the connection: a read between
  // the statements of a transaction must wait for it (Kysely's lock), or it would see uncommitted rows.
  // Reads only: a write that returns rows (`returning`) goes through Kysely like any other write.
  const reads = directReads(sqlite);
  registerDirectReader(kysely, (sqlText, parameters) =>
    turn.beginReads() ? reads.run(sqlText, parameters) : undefined,
  );
  // Written by triggers (migration 0039); no row yet: nothing of the account has changed since. Before
  // that migration has run there is no table, and no version: nothing is kept past a commit.
  let answerVersionOf: SQLite.Statement<[string]> | null | undefined;
  const versionsSeen = new Map<string, number>();
  let versionsSeenIn: number | undefined;
  const answerVersion = (accountId: string): number | undefined => {
    if (answerVersionOf === undefined) {
      try {
        answerVersionOf = sqlite
          .prepare<[string]>('select version from answer_versions where account_id = ?')
          .pluck();
      } catch {
        answerVersionOf = null;
      }
    }
    const snapshot = turn.snapshot();
    if (answerVersionOf === null || snapshot === undefined) return undefined;
    // One snapshot, one number per account: the key's and the answer's checks read it once.
    if (snapshot !== versionsSeenIn) {
      versionsSeenIn = snapshot;
      versionsSeen.clear();
    }
    let version = versionsSeen.get(accountId);
    if (version === undefined) {
      version = (answerVersionOf.get(accountId) as number | undefined) ?? 0;
      versionsSeen.set(accountId, version);
    }
    return version;
  };
  return {
    kysely,
    dialect: 'sqlite',
    changeVersion: turn.changeVersion,
    answerVersion,
    readSnapshot: () => turn.snapshot(),
    readAside: <R>(query: CompiledQuery<R>) => aside.read(query.sql, query.parameters) as Promise<R[]>,
    // A migration may change the columns a kept read returns: its row builders are made anew after it.
    whileMigrating: async (task) => {
      try {
        return await task();
      } finally {
        reads.forget();
        answerVersionOf = undefined;
      }
    },
    // One connection, used synchronously: never idle-waiting, never queued.
    poolUse: () => ({ max: 1, total: 1, idle: 0, waiting: 0 }),
    close: async () => {
      await Promise.all([checkpoints.stop(), aside.stop()]);
      turn.endReads();
      await kysely.destroy();
      watcher.close();
    },
  };
}

/** Makes one row object from a row's values, in the order of the statement's columns. */
type RowBuilder = (values: readonly unknown[]) => Record<string, unknown>;

/** A read run directly: its statement, returning rows as arrays, and the builder of their objects. */
interface DirectRead {
  statement: SQLite.Statement<unknown[], unknown[]>;
  columns: number;
  build: RowBuilder;
}

/**
 * The builder of a statement's row objects: an object literal with the column names as its keys,
 * compiled once per statement, so that V8 makes each row in one allocation of a known shape. As with
 * better-sqlite3's own objects, a name that comes twice keeps its last value. Undefined for a name an
 * object literal cannot hold as a plain key (`__proto__`).
 */
export function rowBuilder(names: readonly string[]): RowBuilder | undefined {
  if (names.includes('__proto__')) return undefined;
  const fields = names.map((name, index) => `${JSON.stringify(name)}: values[${index}]`);
  // Generated code, as Fastify's serialisers and validators are: the keys are the statement's own
  // column names, each quoted as a JSON string, and the values are read by index.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('values', `return { ${fields.join(', ')} };`) as RowBuilder;
}

/**
 * Reads run directly on the connection (registerDirectReader), their rows made into objects here.
 * better-sqlite3 builds each row object in C++, a property at a time through V8's API, which costs about
 * as much again as running the statement: four rows of twenty columns took 40–50 µs as objects and
 * 21 µs as arrays made into objects by a compiled literal (rowBuilder). Each statement is prepared
 * apart from Kysely's (it returns arrays) and kept per SQL text; one that is not a plain read gives
 * undefined, and the query goes through Kysely.
 */
function directReads(sqlite: SQLite.Database, max = 1000) {
  const reads = new KeptLately((sqlText): DirectRead | null => {
    const statement = sqlite.prepare<unknown[], unknown[]>(sqlText);
    if (!statement.reader || !statement.readonly) return null;
    const names = statement.columns().map((column) => column.name);
    const build = rowBuilder(names);
    if (!build) return null;
    return { statement: statement.raw(true), columns: names.length, build };
  }, max);

  return {
    run(sqlText: string, parameters: readonly unknown[]): Record<string, unknown>[] | undefined {
      let read = reads.get(sqlText);
      if (read === null) return undefined;
      let rows = read.statement.all(parameters);
      // Another process migrated the schema under this one: the statement's columns changed with it.
      if (rows.length > 0 && rows[0]?.length !== read.columns) {
        reads.forget(sqlText);
        read = reads.get(sqlText);
        if (read === null) return undefined;
        rows = read.statement.all(parameters);
      }
      const objects: Record<string, unknown>[] = new Array<Record<string, unknown>>(rows.length);
      for (let index = 0; index < rows.length; index++) objects[index] = read.build(rows[index] ?? []);
      return objects;
    },
    /** Forgets every kept read (after a migration). */
    forget(): void {
      reads.forget();
    },
  };
}

/**
 * Kysely prepares every query anew; on SQLite, preparing costs as much as running a small query.
 * Prepared statements are kept per SQL text (Kysely's SQL is parameterised, so the set is small).
 */
function withStatementCache(
  sqlite: SQLite.Database,
  beforeEach: () => void,
  max = 1000,
): Omit<SqliteDatabase, 'prepare'> & { prepare(sqlText: string): SQLite.Statement } {
  const statements = new KeptLately((sqlText) => sqlite.prepare(sqlText), max);
  return {
    close: () => sqlite.close(),
    // Kysely runs each statement as soon as it has prepared it.
    prepare: (sqlText: string) => {
      beforeEach();
      return statements.get(sqlText);
    },
  };
}

/**
 * One turn of the event loop on the SQLite connection: its change version and its direct reads.
 *
 * A statement run on its own is a transaction of its own: SQLite takes and drops the file's shared lock
 * and a read mark of the write-ahead log's index around it: system calls that cost more than a small
 * indexed read (5 µs against 0.4–2 µs in a loop). The direct reads of one turn (every request and job
 * handled in it) therefore share one read transaction, begun by the first and committed when the turn
 * ends, or before any statement of Kysely's (a write, a transaction's begin), whichever comes first.
 * Reads of a turn see one snapshot; a read transaction never holds up another connection's writes.
 *
 * The change version is read once per turn, and before the turn's first snapshot is taken. A value kept
 * under that version (read-cache.ts) was therefore read from rows at least as new as the version says:
 * a commit between the two moves the next turn's version, which drops the value.
 */
function readsOfATurn(sqlite: SQLite.Database, readVersion: () => number) {
  const begin = sqlite.prepare('begin');
  const commit = sqlite.prepare('commit');
  let version: number | undefined;
  let reading = false;
  /** Read transactions begun so far: the number of the one open names its snapshot. */
  let snapshots = 0;
  let ending = false;

  const endReads = (): void => {
    if (!reading) return;
    reading = false;
    if (sqlite.open && sqlite.inTransaction) commit.run();
  };
  const endTurn = (): void => {
    ending = false;
    version = undefined;
    endReads();
  };
  const inThisTurn = (): void => {
    if (ending) return;
    ending = true;
    setImmediate(endTurn);
  };
  const changeVersion = (): number => {
    inThisTurn();
    version ??= readVersion();
    return version;
  };

  /** Whether a direct read may run now: the turn's read transaction is open (begun here if need be). */
  const beginReads = (): boolean => {
    if (reading) return true;
    // A transaction of Kysely's: the read waits for it, through Kysely.
    if (sqlite.inTransaction) return false;
    changeVersion();
    begin.run();
    reading = true;
    snapshots += 1;
    return true;
  };

  return {
    changeVersion,
    beginReads,
    /** The number of the read transaction open now (begun here if need be); undefined if none can be. */
    snapshot: (): number | undefined => (beginReads() ? snapshots : undefined),
    endReads,
  };
}

/**
 * An account's answer version on PostgreSQL (migration 0042), as an expression: the sum over its slots'
 * rows, 0 while it has none (nothing of the account has changed since). `account`: its id, or a
 * reference to the column that holds it.
 */
export function answerVersionSql(account: string | RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(select coalesce(sum(version), 0)::float8 from answer_versions where account_id = ${account})`;
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
  const readAnswerVersion = async (accountId: string): Promise<number> => {
    const { rows } = await sql<{ version: number }>`select ${answerVersionSql(accountId)} as version`.execute(
      kysely,
    );
    return rows[0]?.version ?? 0;
  };
  return {
    kysely,
    dialect: 'postgres',
    readAnswerVersion,
    readAside: async <R>(query: CompiledQuery<R>) => (await kysely.executeQuery(query)).rows,
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
