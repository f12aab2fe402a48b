import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, rowBuilder, type Db } from '../src/db/database.js';
import { preparedInsert, preparedQuery } from '../src/db/prepared.js';
import type { Database } from '../src/db/schema.js';
import { DATABASES, TEST_POSTGRES_URL } from './helpers/env.js';
import { nextTurn } from './helpers/server.js';

// A scratch table outside the schema's types: the builder is given it as a name Kysely does not check.
const probe = (db: Kysely<Database>) => db.withTables<{ prepared_probe: { name: string; value: string } }>();

const valueOf = preparedQuery(
  (db: Kysely<Database>, name: string) =>
    probe(db).selectFrom('prepared_probe').select('value').where('name', '=', name),
  ['name'],
);

describe.each(DATABASES)('preparedQuery on %s', (database) => {
  let dataDir: string;
  let db: Db;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'prepared-'));
    const schema = `prepared_${process.pid}`;
    db = openDatabase({
      databaseUrl: database === 'postgres' ? `${TEST_POSTGRES_URL}?schema=${schema}` : undefined,
      dataDir,
    });
    if (database === 'postgres') await sql`create schema if not exists ${sql.id(schema)}`.execute(db.kysely);
    await sql`create table prepared_probe (name text primary key, value text not null)`.execute(db.kysely);
    await sql`insert into prepared_probe (name, value) values ('a', 'committed')`.execute(db.kysely);
    await sql`create table prepared_rows (name text primary key, value text not null default 'default', extra text)`.execute(
      db.kysely,
    );
  });

  afterAll(async () => {
    if (database === 'postgres') {
      await sql`drop schema if exists ${sql.id(`prepared_${process.pid}`)} cascade`.execute(db.kysely);
    }
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('never sees the rows of a transaction still open, and sees them once it commits', async () => {
    let readDuring: unknown;
    await db.kysely.transaction().execute(async (trx) => {
      await sql`update prepared_probe set value = 'uncommitted' where name = 'a'`.execute(trx);
      await sql`insert into prepared_probe (name, value) values ('b', 'uncommitted')`.execute(trx);
      // Another request's read while this transaction is open: it waits for the commit or, on SQLite's
      // one connection, would otherwise read inside it. Either way it must not see these rows now.
      const read = Promise.all([valueOf(db.kysely, 'a'), valueOf(db.kysely, 'b')]);
      readDuring = await Promise.race([read, new Promise((resolve) => setTimeout(resolve, 50, 'waiting'))]);
      if (readDuring === 'waiting') readDuring = undefined;
      else await read;
    });
    if (readDuring !== undefined) expect(readDuring).toEqual([[{ value: 'committed' }], []]);
    expect(await valueOf(db.kysely, 'a')).toEqual([{ value: 'uncommitted' }]);
    expect(await valueOf(db.kysely, 'b')).toEqual([{ value: 'uncommitted' }]);
  });

  it('reads in a transaction what the transaction wrote', async () => {
    await db.kysely.transaction().execute(async (trx) => {
      await sql`insert into prepared_probe (name, value) values ('c', 'mine')`.execute(trx);
      expect(await valueOf(trx, 'c')).toEqual([{ value: 'mine' }]);
    });
  });

  it('refuses a builder whose parameters are not its placeholders in their order', async () => {
    const swapped = preparedQuery(
      (db: Kysely<Database>, name: string, value: string) =>
        probe(db)
          .selectFrom('prepared_probe')
          .select('name')
          .where('value', '=', value)
          .where('name', '=', name),
      ['name', 'value'],
    );
    await expect(swapped(db.kysely, 'a', 'committed')).rejects.toThrow(/in their order/);
  });

  it('inserts compiled rows, and leaves any other set of columns to the builder', async () => {
    // A scratch table outside the schema's types.
    const insertRows = preparedInsert('prepared_rows' as never, ['name', 'value'] as never[]);
    const insert = (rows: object[]) => insertRows(db.kysely, rows);
    await insert([{ name: 'x', value: 'given' }]);
    await insert([
      { name: 'x2', value: 'two' },
      { name: 'x3', value: 'three' },
    ]);
    // No value: the column's default, never null. One column more: kept, never dropped.
    await insert([{ name: 'y' }]);
    await insert([{ name: 'z', value: 'given', extra: 'kept' }]);
    const { rows } = await sql<{
      name: string;
      value: string;
      extra: string | null;
    }>`select name, value, extra from prepared_rows order by name`.execute(db.kysely);
    expect(rows).toEqual([
      { name: 'x', value: 'given', extra: null },
      { name: 'x2', value: 'two', extra: null },
      { name: 'x3', value: 'three', extra: null },
      { name: 'y', value: 'default', extra: null },
      { name: 'z', value: 'given', extra: 'kept' },
    ]);
  });

  it('skips a row whose unique value is there already, compiled or built', async () => {
    const insertNew = preparedInsert('prepared_rows' as never, ['name', 'value'] as never[], {
      skipIfExists: 'name',
    });
    const insert = (rows: object[]) => insertNew(db.kysely, rows);
    await insert([{ name: 'k', value: 'first' }]);
    // Compiled (the same columns), then built (one column more): neither fails nor overwrites.
    await insert([{ name: 'k', value: 'second' }]);
    await insert([{ name: 'k', value: 'third', extra: 'more' }]);
    await insert([
      { name: 'k', value: 'fourth' },
      { name: 'k2', value: 'new' },
    ]);
    const { rows } = await sql<{
      name: string;
      value: string;
      extra: string | null;
    }>`select name, value, extra from prepared_rows where name like 'k%' order by name`.execute(db.kysely);
    expect(rows).toEqual([
      { name: 'k', value: 'first', extra: null },
      { name: 'k2', value: 'new', extra: null },
    ]);
  });
});

/** The row 'a' of direct_probe as inserted below: every kind of value, and a column name to quote. */
const ROW_A = {
  name: 'a',
  score: 1.5,
  count: 42,
  data: Buffer.from([0, 255]),
  'odd "quoted" \\ name': 'quoted',
};

describe('direct reads on SQLite', () => {
  let dataDir: string;
  let db: Db;

  // A scratch table outside the schema's types, read with `select *` so that its columns may change.
  const everyColumn = preparedQuery(
    (kysely: Kysely<Database>, name: string) =>
      kysely
        .withTables<{ direct_probe: { name: string } }>()
        .selectFrom('direct_probe')
        .selectAll()
        .where('name', '=', name),
    ['name'],
  );
  const joined = preparedQuery(
    (kysely: Kysely<Database>, name: string) =>
      kysely
        .withTables<{
          direct_probe: { name: string; score: number | null };
          direct_other: { name: string; probe: string; note: string };
        }>()
        .selectFrom('direct_probe as a')
        .innerJoin('direct_other as b', 'b.probe', 'a.name')
        .select(['a.name', 'a.score', 'b.name as name', 'b.note'])
        .where('a.name', '=', name),
    ['name'],
  );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'direct-'));
    db = openDatabase({ databaseUrl: undefined, dataDir });
    await sql`create table direct_probe (name text primary key, score real, count integer, data blob, "odd ""quoted"" \\ name" text)`.execute(
      db.kysely,
    );
    await sql`create table direct_other (name text primary key, probe text, note text)`.execute(db.kysely);
    await sql`insert into direct_probe values ('a', 1.5, 42, x'00ff', 'quoted'), ('b', null, null, null, null)`.execute(
      db.kysely,
    );
    await sql`insert into direct_other values ('other', 'a', 'joined')`.execute(db.kysely);
  });

  afterAll(async () => {
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('gives the rows Kysely gives: every column, its value and its type, nulls and bytes', async () => {
    for (const name of ['a', 'b', 'missing']) {
      const { rows } = await sql`select * from direct_probe where name = ${name}`.execute(db.kysely);
      const direct = await everyColumn(db.kysely, name);
      expect(direct).toEqual(rows);
      expect(direct.map((row) => Object.keys(row))).toEqual(rows.map((row) => Object.keys(row as object)));
    }
    expect((await everyColumn(db.kysely, 'a'))[0]).toEqual(ROW_A);
  });

  it('keeps the last value of a column name given twice, as better-sqlite3 does', async () => {
    const { rows } = await sql`select a.name, a.score, b.name as name, b.note from direct_probe a
      join direct_other b on b.probe = a.name where a.name = ${'a'}`.execute(db.kysely);
    expect(await joined(db.kysely, 'a')).toEqual(rows);
    expect(rows).toEqual([{ name: 'other', score: 1.5, note: 'joined' }]);
  });

  it('follows the columns when another connection changes the table, and after a migration', async () => {
    expect(Object.keys((await everyColumn(db.kysely, 'a'))[0] ?? {})).toHaveLength(5);
    // Another process's migration: a connection of its own adds a column.
    const other = openDatabase({ databaseUrl: undefined, dataDir });
    try {
      await sql`alter table direct_probe add column added text default 'new'`.execute(other.kysely);
    } finally {
      await other.close();
    }
    // The reads of a turn share one snapshot (below): the other connection's change is seen from the next.
    await nextTurn();
    expect((await everyColumn(db.kysely, 'a'))[0]).toMatchObject({ name: 'a', added: 'new' });
    // This process's own migration renames one: the count of columns is the same, the names are not.
    await db.whileMigrating?.(async () => {
      await sql`alter table direct_probe rename column score to points`.execute(db.kysely);
    });
    const { score, ...unchanged } = ROW_A;
    expect((await everyColumn(db.kysely, 'a'))[0]).toEqual({ ...unchanged, points: score, added: 'new' });
  });
});

describe('the reads of a turn on SQLite', () => {
  let dataDir: string;
  let db: Db;
  let other: Db;

  const scoreOf = preparedQuery(
    (kysely: Kysely<Database>, name: string) =>
      kysely
        .withTables<{ turn_probe: { name: string; score: number } }>()
        .selectFrom('turn_probe')
        .select('score')
        .where('name', '=', name),
    ['name'],
  );
  const score = async (handle: Db) => (await scoreOf(handle.kysely, 'a'))[0]?.score;
  const setScore = (kysely: Kysely<Database>, value: number) =>
    sql`update turn_probe set score = ${value} where name = 'a'`.execute(kysely);

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'turn-'));
    db = openDatabase({ databaseUrl: undefined, dataDir });
    await sql`create table turn_probe (name text primary key, score integer)`.execute(db.kysely);
    await sql`insert into turn_probe values ('a', 0)`.execute(db.kysely);
    // Another process's connection to the same file.
    other = openDatabase({ databaseUrl: undefined, dataDir });
  });

  afterAll(async () => {
    await other.close();
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("share one snapshot: another connection's commit is seen from the next turn", async () => {
    await nextTurn();
    expect(await score(db)).toBe(0);
    await setScore(other.kysely, 1);
    // Still the turn of the first read: one read transaction, one snapshot.
    expect(await score(db)).toBe(0);
    await nextTurn();
    expect(await score(db)).toBe(1);
  });

  it("see the connection's own writes at once, and let its transactions begin", async () => {
    await nextTurn();
    expect(await score(db)).toBe(1);
    await setScore(db.kysely, 2);
    expect(await score(db)).toBe(2);
    // A transaction begun while the turn's reads are open; a read inside it goes through Kysely.
    await db.kysely.transaction().execute(async (trx) => {
      await setScore(trx, 3);
      expect(await scoreOf(trx, 'a')).toEqual([{ score: 3 }]);
    });
    expect(await score(db)).toBe(3);
  });

  it('read the change version before their snapshot, so that a value kept under it is never older', async () => {
    await nextTurn();
    expect(await score(db)).toBe(3);
    // Another connection commits after the turn's first read, before its first look at the version.
    await setScore(other.kysely, 4);
    const version = db.changeVersion?.();
    expect(await score(db)).toBe(3);
    await nextTurn();
    // The version the turn gave predates that commit: the next turn's differs, and what was kept goes.
    expect(db.changeVersion?.()).not.toBe(version);
    expect(await score(db)).toBe(4);
  });
});

describe('rowBuilder', () => {
  it('makes objects keyed by the names in their order, the last of a name twice kept', () => {
    const build = rowBuilder(['id', 'a "quoted" \\ name', 'id']);
    expect(build?.([1, 'x', 2])).toEqual({ id: 2, 'a "quoted" \\ name': 'x' });
    expect(Object.keys(rowBuilder(['b', 'a', 'c'])?.([1, 2, 3]) ?? {})).toEqual(['b', 'a', 'c']);
  });

  it('refuses a name an object literal cannot hold as a key', () => {
    expect(rowBuilder(['id', '__proto__'])).toBeUndefined();
  });
});
