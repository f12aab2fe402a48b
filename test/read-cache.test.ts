import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../src/db/database.js';
import { preparedQuery } from '../src/db/prepared.js';
import type { Database } from '../src/db/schema.js';
import { betweenCommits, cachedReader } from '../src/db/read-cache.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DATABASES, TEST_POSTGRES_URL } from './helpers/env.js';
import { nextTurn, openTestDatabase } from './helpers/server.js';

/** A reader of one scratch table that counts how often it really reads the database. */
function countingReader() {
  let reads = 0;
  const read = cachedReader<string>(async (db, key) => {
    reads += 1;
    const { rows } = await sql<{
      value: string;
    }>`select value from read_cache_probe where name = ${key}`.execute(db.kysely);
    return rows[0]?.value;
  });
  return { read, reads: () => reads };
}

async function setValue(db: Db, name: string, value: string): Promise<void> {
  await sql`delete from read_cache_probe where name = ${name}`.execute(db.kysely);
  await sql`insert into read_cache_probe (name, value) values (${name}, ${value})`.execute(db.kysely);
}

describe('cachedReader on SQLite: kept between commits, dropped by any commit of any connection', () => {
  let dataDir: string;
  let db: Db;
  let other: Db;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'read-cache-'));
    db = openDatabase({ databaseUrl: undefined, dataDir });
    // A second handle on the same file stands for another process (another connection).
    other = openDatabase({ databaseUrl: undefined, dataDir });
    await sql`create table read_cache_probe (name text primary key, value text not null)`.execute(db.kysely);
    await setValue(db, 'a', 'one');
  });

  afterAll(async () => {
    await other.close();
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers repeated reads from memory while nothing is committed', async () => {
    const { read, reads } = countingReader();
    expect(await read(db, 'a')).toBe('one');
    await nextTurn();
    expect(await read(db, 'a')).toBe('one');
    await nextTurn();
    expect(await read(db, 'a')).toBe('one');
    expect(reads()).toBe(1);
  });

  it("sees this process's own commit on the next turn", async () => {
    const { read, reads } = countingReader();
    expect(await read(db, 'a')).toBe('one');
    await setValue(db, 'a', 'two');
    await nextTurn();
    expect(await read(db, 'a')).toBe('two');
    expect(reads()).toBe(2);
  });

  it("sees another connection's commit on the next turn", async () => {
    const { read, reads } = countingReader();
    await setValue(db, 'a', 'three');
    await nextTurn();
    expect(await read(db, 'a')).toBe('three');
    await setValue(other, 'a', 'four');
    await nextTurn();
    expect(await read(db, 'a')).toBe('four');
    expect(reads()).toBe(2);
  });

  it('never keeps "not found", so unknown keys always reach the database', async () => {
    const { read, reads } = countingReader();
    expect(await read(db, 'missing')).toBeUndefined();
    await nextTurn();
    expect(await read(db, 'missing')).toBeUndefined();
    expect(reads()).toBe(2);
    await setValue(other, 'missing', 'found now');
    await nextTurn();
    expect(await read(db, 'missing')).toBe('found now');
  });

  it('empties a memo whose values would weigh more than its bound, then keeps on', async () => {
    const memo = betweenCommits<string>({ weigh: (value) => value.length, maxWeight: 10 });
    const load = (value: string) => () => Promise.resolve(value);
    await nextTurn();
    expect(await memo(db, 'a', load('aaaa'))).toBe('aaaa');
    expect(await memo(db, 'b', load('bbbb'))).toBe('bbbb');
    expect([memo.peek(db, 'a'), memo.peek(db, 'b')]).toEqual(['aaaa', 'bbbb']);
    // 4 + 4 + 4 > 10: the memo is emptied before the third is kept.
    expect(await memo(db, 'c', load('cccc'))).toBe('cccc');
    expect([memo.peek(db, 'a'), memo.peek(db, 'b'), memo.peek(db, 'c')]).toEqual([
      undefined,
      undefined,
      'cccc',
    ]);
    // 4 + 2 + 4 = 10: within the bound, all three kept.
    expect(await memo(db, 'd', load('dd'))).toBe('dd');
    expect(await memo(db, 'e', load('eeee'))).toBe('eeee');
    expect([memo.peek(db, 'c'), memo.peek(db, 'd'), memo.peek(db, 'e')]).toEqual(['cccc', 'dd', 'eeee']);
  });
});

describe("an account's value kept past other commits (SQLite, the account versions migrated)", () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;
  let account: string;
  let otherAccount: string;

  beforeAll(async () => {
    database = await openTestDatabase('sqlite');
    db = database.db;
    const at = new Date().toISOString();
    account = (await createAccount(db.kysely, { email: 'kept@example.com', plan: 'agency' }, at)).account_id;
    otherAccount = (await createAccount(db.kysely, { email: 'other@example.com', plan: 'agency' }, at))
      .account_id;
  });

  afterAll(async () => {
    await database.close();
  });

  // Read as the service's kept reads are: compiled once, run directly in the turn's read transaction.
  const selectName = preparedQuery(
    (kysely: Kysely<Database>, id: string) =>
      kysely.selectFrom('accounts').select('name').where('id', '=', id),
    [''],
  );
  const nameOf = async (id: string): Promise<string | undefined> =>
    (await selectName(db.kysely, id))[0]?.name;
  const rename = (id: string, name: string) =>
    sql`update accounts set name = ${name} where id = ${id}`.execute(db.kysely);

  /** A memo of the account's name, and its load, which counts how often it reads the database. */
  const countedNameMemo = () => {
    const memo = betweenCommits<string>();
    let reads = 0;
    const load = () => {
      reads += 1;
      return nameOf(account);
    };
    return { memo, load, loads: () => reads };
  };

  it("keeps a value past another account's commit, and drops it at its own account's", async () => {
    await rename(account, 'First');
    const { memo, load, loads } = countedNameMemo();
    await nextTurn();
    expect(await memo(db, 'name', load, () => account)).toBe('First');
    await rename(otherAccount, 'Someone else');
    await nextTurn();
    expect(await memo(db, 'name', load, () => account)).toBe('First');
    expect(loads()).toBe(1);
    await rename(account, 'Second');
    await nextTurn();
    expect(await memo(db, 'name', load, () => account)).toBe('Second');
    expect(loads()).toBe(2);
  });

  it("does not keep a value past a commit when its account's rows changed between its read and the version's", async () => {
    await rename(account, 'Before');
    const memo = betweenCommits<string>();
    await nextTurn();
    // The rows are read, then the account's row is changed and committed in the same turn, before the
    // account is known from the value (an API key's account is): its version is read after that commit.
    const value = await memo(
      db,
      'name',
      async () => {
        const read = await nameOf(account);
        await rename(account, 'After');
        return read;
      },
      () => account,
    );
    expect(value).toBe('Before');
    await nextTurn();
    // A version read after the commit would match now, and the old name would be answered.
    expect(memo.peek(db, 'name')).toBeUndefined();
    expect(
      await memo(
        db,
        'name',
        () => nameOf(account),
        () => account,
      ),
    ).toBe('After');
  });

  it('keeps a value that cannot be checked while a transaction holds the connection, for after it', async () => {
    await rename(account, 'Kept');
    const { memo, load, loads } = countedNameMemo();
    await nextTurn();
    expect(await memo(db, 'name', load, account)).toBe('Kept');
    await rename(otherAccount, 'Another change');
    await nextTurn();
    await db.kysely.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      // The account's version cannot be read inside another's transaction: nothing is answered from memory.
      expect(memo.peek(db, 'name')).toBeUndefined();
    });
    await nextTurn();
    expect(memo.peek(db, 'name')).toBe('Kept');
    expect(await memo(db, 'name', load, account)).toBe('Kept');
    expect(loads()).toBe(1);
  });
});

describe.runIf(DATABASES.includes('postgres'))('cachedReader on PostgreSQL', () => {
  it('reads the database every time (no change version to trust)', async () => {
    const schema = `read_cache_${process.pid}_${Date.now()}`;
    const url = `${TEST_POSTGRES_URL}?schema=${schema}`;
    const bootstrap = openDatabase({ databaseUrl: TEST_POSTGRES_URL, dataDir: '' });
    await sql`create schema ${sql.id(schema)}`.execute(bootstrap.kysely);
    const db = openDatabase({ databaseUrl: url, dataDir: '' });
    try {
      expect(db.changeVersion).toBeUndefined();
      await sql`create table read_cache_probe (name text primary key, value text not null)`.execute(
        db.kysely,
      );
      await setValue(db, 'a', 'one');
      const { read, reads } = countingReader();
      expect(await read(db, 'a')).toBe('one');
      expect(await read(db, 'a')).toBe('one');
      expect(reads()).toBe(2);
    } finally {
      await db.close();
      await sql`drop schema ${sql.id(schema)} cascade`.execute(bootstrap.kysely);
      await bootstrap.close();
    }
  });
});

describe.runIf(DATABASES.includes('postgres'))(
  "an account's value checked against its version on every read (PostgreSQL, checkEachRead)",
  () => {
    let database: Awaited<ReturnType<typeof openTestDatabase>>;
    let db: Db;
    let account: string;
    let otherAccount: string;

    beforeAll(async () => {
      database = await openTestDatabase('postgres');
      db = database.db;
      const at = new Date().toISOString();
      account = (await createAccount(db.kysely, { email: 'kept@example.com', plan: 'agency' }, at))
        .account_id;
      otherAccount = (await createAccount(db.kysely, { email: 'other@example.com', plan: 'agency' }, at))
        .account_id;
    });

    afterAll(async () => {
      await database.close();
    });

    const nameOf = async (id: string) =>
      (await db.kysely.selectFrom('accounts').select('name').where('id', '=', id).executeTakeFirst())?.name;
    const rename = (id: string, name: string) =>
      sql`update accounts set name = ${name} where id = ${id}`.execute(db.kysely);

    it("keeps a value past another account's commit, and drops it at its own account's", async () => {
      await rename(account, 'First');
      const memo = betweenCommits<string>({ checkEachRead: true });
      let loads = 0;
      const load = () => {
        loads += 1;
        return nameOf(account);
      };
      expect(await memo(db, 'name', load, account)).toBe('First');
      expect(await memo(db, 'name', load, account)).toBe('First');
      await rename(otherAccount, 'Someone else');
      expect(await memo(db, 'name', load, account)).toBe('First');
      expect(loads).toBe(1);
      await rename(account, 'Second');
      expect(await memo(db, 'name', load, account)).toBe('Second');
      expect(loads).toBe(2);
      // Without checkEachRead nothing is kept where there is no change version.
      const unchecked = betweenCommits<string>();
      await unchecked(db, 'name', load, account);
      await unchecked(db, 'name', load, account);
      expect(loads).toBe(4);
    });

    it("does not keep a value past a commit of its account's made after the value's rows were read", async () => {
      await rename(account, 'Before');
      const memo = betweenCommits<string>({ checkEachRead: true });
      // The rows are read, then the account's rows change before the value is kept.
      const racing = async () => {
        const name = await nameOf(account);
        await rename(account, 'After');
        return name;
      };
      expect(await memo(db, 'name', racing, account)).toBe('Before');
      expect(await memo(db, 'name', () => nameOf(account), account)).toBe('After');
    });
  },
);
