import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../src/db/database.js';
import { MAX_NAMED_STATEMENTS, RUNS_BEFORE_NAMING } from '../src/db/pg-named-statements.js';
import type { Database } from '../src/db/schema.js';
import { DATABASES, TEST_POSTGRES_URL } from './helpers/env.js';

/** The statements prepared on the connection that `db` runs on (a transaction keeps one connection). */
async function preparedOn(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
  return rows.map((row) => row.statement);
}

const PROBE_READ = 'select * from named_probe where a = $1';

async function readProbe(db: Kysely<Database>): Promise<Record<string, unknown>[]> {
  const { rows } = await sql<Record<string, unknown>>`select * from named_probe where a = ${1}`.execute(db);
  return rows;
}

describe.runIf(DATABASES.includes('postgres'))('named statements on PostgreSQL', () => {
  const schema = `named_${process.pid}`;
  let dataDir: string;
  let db: Db;
  /** Another process's connection to the same schema: it makes the migration below. */
  let other: Db;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'named-'));
    const databaseUrl = `${TEST_POSTGRES_URL}?schema=${schema}`;
    db = openDatabase({ databaseUrl, dataDir });
    other = openDatabase({ databaseUrl, dataDir });
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db.kysely);
    await sql`create table named_probe (a int primary key)`.execute(db.kysely);
    await sql`insert into named_probe (a) values (1)`.execute(db.kysely);
  });

  afterAll(async () => {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db.kysely);
    await other.close();
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prepares a statement with parameters once per connection from its third run, and one without none', async () => {
    await db.kysely.transaction().execute(async (trx) => {
      await sql`select a from named_probe where a > ${0}`.execute(trx);
      await readProbe(trx);
      await readProbe(trx);
      expect(await preparedOn(trx)).toEqual([]);
      await readProbe(trx);
      await readProbe(trx);
      await sql`select count(*) from named_probe`.execute(trx);
      const prepared = await preparedOn(trx);
      expect(prepared.filter((text) => text === PROBE_READ)).toHaveLength(1);
      // Run once only, or without parameters: never named.
      expect(prepared).toHaveLength(1);
    });
  });

  it("runs a statement whose columns another process's migration changed, and retires the stale connections", async () => {
    for (let run = 0; run < 3; run++) expect(await readProbe(db.kysely)).toEqual([{ a: 1 }]);
    await sql`alter table named_probe add column b text`.execute(other.kysely);
    // Refused by PostgreSQL as prepared ("cached plan must not change result type"): run again unnamed.
    expect(await readProbe(db.kysely)).toEqual([{ a: 1, b: null }]);
    // A transaction cannot run a refused statement again: it gets a connection prepared afresh.
    const inTransaction = await db.kysely.transaction().execute((trx) => readProbe(trx));
    expect(inTransaction).toEqual([{ a: 1, b: null }]);
  });

  it('names nothing with prepared_statements=false in the URL (for poolers that cannot keep them)', async () => {
    const plain = openDatabase({
      databaseUrl: `${TEST_POSTGRES_URL}?schema=${schema}&prepared_statements=false`,
      dataDir,
    });
    try {
      const seen = await plain.kysely.transaction().execute(async (trx) => {
        for (let run = 0; run < 4; run++) await readProbe(trx);
        return preparedOn(trx);
      });
      expect(seen).toEqual([]);
    } finally {
      await plain.close();
    }
    expect(() =>
      openDatabase({ databaseUrl: `${TEST_POSTGRES_URL}?prepared_statements=no`, dataDir }),
    ).toThrow(/prepared_statements/);
  });

  it('gives each process names of its own, so that behind a pooler no name runs another statement', async () => {
    const namesIn = async (database: Db) =>
      database.kysely.transaction().execute(async (trx) => {
        for (let run = 0; run < RUNS_BEFORE_NAMING; run++) await readProbe(trx);
        const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(trx);
        return rows.map((row) => row.name);
      });
    const first = openDatabase({ databaseUrl: `${TEST_POSTGRES_URL}?schema=${schema}`, dataDir });
    const second = openDatabase({ databaseUrl: `${TEST_POSTGRES_URL}?schema=${schema}`, dataDir });
    try {
      const [a, b] = [await namesIn(first), await namesIn(second)];
      expect(a).toHaveLength(1);
      expect(b).toHaveLength(1);
      expect(a[0]).not.toEqual(b[0]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  describe('behind a pooler that does not keep prepared statements', () => {
    /** Runs `task` in a process of its own (one connection at a time here), with what it warns of. */
    async function inProcess(task: (database: Db, warnings: string[]) => Promise<void>): Promise<void> {
      const warnings: string[] = [];
      const database = openDatabase({
        databaseUrl: `${TEST_POSTGRES_URL}?schema=${schema}`,
        dataDir,
        warn: (message) => warnings.push(message),
      });
      try {
        await task(database, warnings);
      } finally {
        await database.close();
      }
    }

    /** The probe's read named on the process's connection; with `then` run before the transaction ends. */
    function probeNamed(database: Db, then: (trx: Kysely<Database>) => Promise<unknown>): Promise<unknown> {
      return database.kysely.transaction().execute(async (trx) => {
        for (let run = 0; run < RUNS_BEFORE_NAMING; run++) await readProbe(trx);
        expect(await preparedOn(trx)).toEqual([PROBE_READ]);
        return then(trx);
      });
    }

    /** As a pooler hands the client another server connection: what it prepared is not there. */
    const dropPrepared = (trx: Kysely<Database>) => sql`deallocate all`.execute(trx);

    it('runs a statement the server connection has lost unnamed, then names nothing more, and warns once', () =>
      inProcess(async (database, warnings) => {
        await probeNamed(database, dropPrepared);
        expect(await readProbe(database.kysely)).toEqual([{ a: 1, b: null }]);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(/does not exist.*prepared_statements=false/);
        const preparedSince = await database.kysely.transaction().execute(async (trx) => {
          for (let run = 0; run < RUNS_BEFORE_NAMING + 1; run++) {
            await sql`select a from named_probe where a >= ${1}`.execute(trx);
            await readProbe(trx);
          }
          return preparedOn(trx);
        });
        expect(preparedSince).toEqual([]);
        expect(warnings).toHaveLength(1);
      }));

    it('fails a transaction whose statement was lost once, and names nothing afterwards', () =>
      inProcess(async (database, warnings) => {
        await probeNamed(database, dropPrepared);
        await expect(database.kysely.transaction().execute((trx) => readProbe(trx))).rejects.toThrow(
          /does not exist/,
        );
        expect(warnings).toHaveLength(1);
        expect(await database.kysely.transaction().execute((trx) => readProbe(trx))).toEqual([
          { a: 1, b: null },
        ]);
      }));

    it('runs a statement whose name the server connection already holds unnamed, and warns once', () =>
      inProcess(async (database, warnings) => {
        await probeNamed(database, async (trx) => {
          const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(trx);
          const first = rows[0]?.name ?? '';
          // The next name this process gives: another client of it prepared that on this server connection.
          const next = first.replace(/0$/, '1');
          expect(next).not.toEqual(first);
          await sql`prepare ${sql.id(next)} as select 2`.execute(trx);
        });
        // Outside a transaction, on the same (the only) connection: the third run is named, and refused.
        const total = () => sql<{ total: number }>`select a + ${1}::int as total from named_probe`;
        for (let run = 0; run < RUNS_BEFORE_NAMING - 1; run++) await total().execute(database.kysely);
        const answer = await total().execute(database.kysely);
        expect(answer.rows).toEqual([{ total: 2 }]);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(/already exists/);
      }));
  });

  it('names at most MAX_NAMED_STATEMENTS statements in a process; the rest run unnamed', async () => {
    const fresh = openDatabase({ databaseUrl: `${TEST_POSTGRES_URL}?schema=${schema}`, dataDir });
    try {
      const prepared = await fresh.kysely.transaction().execute(async (trx) => {
        for (let statement = 0; statement <= MAX_NAMED_STATEMENTS; statement++) {
          for (let run = 0; run < RUNS_BEFORE_NAMING; run++) {
            await sql`select ${sql.lit(statement)} + ${run}::int as total`.execute(trx);
          }
        }
        return preparedOn(trx);
      });
      expect(prepared).toHaveLength(MAX_NAMED_STATEMENTS);
    } finally {
      await fresh.close();
    }
  });

  it('retires the connections opened before a migration, with the statements prepared on them', async () => {
    const before = await db.kysely.transaction().execute(async (trx) => {
      for (let run = 0; run < 4; run++) await readProbe(trx);
      return preparedOn(trx);
    });
    expect(before).toContain(PROBE_READ);
    const migrate = db.whileMigrating;
    if (!migrate) throw new Error('PostgreSQL runs migrations with nothing named');
    await migrate(() => Promise.resolve());
    // The next transaction runs on a connection opened after the migration: nothing prepared on it yet.
    const after = await db.kysely.transaction().execute((trx) => preparedOn(trx));
    expect(after).toEqual([]);
  });

  it('names nothing while a migration runs', async () => {
    const whileMigrating = db.whileMigrating;
    if (!whileMigrating) throw new Error('PostgreSQL runs migrations with nothing named');
    const seen = await whileMigrating(() =>
      db.kysely.transaction().execute(async (trx) => {
        for (let run = 0; run < 4; run++) await sql`select a from named_probe where a = ${2}`.execute(trx);
        return preparedOn(trx);
      }),
    );
    expect(seen.some((text) => text.includes('where a = $1') && text.startsWith('select a '))).toBe(false);
  });
});
