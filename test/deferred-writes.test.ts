import { randomBytes } from 'node:crypto';
import { Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deferrable } from '../src/db/deferred-writes.js';
import { SearchPathPostgresDialect } from '../src/db/pg-introspector.js';
import { withNamedStatements, type NamedStatementsPool } from '../src/db/pg-named-statements.js';
import { serviceAvailable, TEST_POSTGRES_URL } from './helpers/env.js';

/**
 * Deferred writes on a real PostgreSQL, through the pool the service uses: what each transaction
 * sends is recorded by the connections themselves.
 */
const ready = await serviceAvailable('postgres');

interface Tables {
  dw_parent: { id: string };
  dw_child: { id: string; parent_id: string };
  dw_other: { id: string; n: number };
}

describe.runIf(ready)('deferred writes on PostgreSQL', () => {
  const schema = `deferred_${process.pid}_${randomBytes(3).toString('hex')}`;
  const sent: string[] = [];
  let pool: pg.Pool;
  let named: NamedStatementsPool;
  let db: Kysely<Tables>;

  beforeAll(async () => {
    class RecordingClient extends pg.Client {
      override query(...args: unknown[]): never {
        const [first] = args;
        // A unit (a transaction's begin or commit sent with a statement) as its statements, " | "-joined.
        const query = first as { text?: string; statements?: string } | undefined;
        const text = typeof first === 'string' ? first : (query?.statements ?? query?.text);
        if (text !== undefined) sent.push(text);
        return (super.query as (...a: unknown[]) => never)(...args);
      }
    }
    pool = new pg.Pool({
      connectionString: TEST_POSTGRES_URL,
      max: 3,
      Client: RecordingClient,
      options: `-c search_path=${schema}`,
    });
    named = withNamedStatements(pool, { enabled: true, pg });
    db = new Kysely<Tables>({ dialect: new SearchPathPostgresDialect({ pool: named }) });
    await sql`create schema ${sql.id(schema)}`.execute(db);
    await sql`create table dw_parent (id text primary key)`.execute(db);
    await sql`create table dw_child (id text primary key, parent_id text not null references dw_parent (id))`.execute(
      db,
    );
    await sql`create table dw_other (id text primary key, n integer not null)`.execute(db);
    await sql`insert into dw_other (id, n) values ('o', 7)`.execute(db);
  });
  afterAll(async () => {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
    await db.destroy();
  });
  beforeEach(async () => {
    await sql`delete from dw_child`.execute(db);
    await sql`delete from dw_parent`.execute(db);
    sent.length = 0;
  });

  const parents = async () =>
    (await db.selectFrom('dw_parent').select('id').orderBy('id').execute()).map((r) => r.id);
  const children = async () => (await db.selectFrom('dw_child').select('id').execute()).map((r) => r.id);

  it('sends two writes and a read of another table as one statement, and commits both', async () => {
    const read = await db.transaction().execute(async (trx) => {
      await deferrable(trx.insertInto('dw_parent').values({ id: 'p1' })).execute();
      await deferrable(trx.insertInto('dw_child').values({ id: 'c1', parent_id: 'p1' })).execute();
      return trx.selectFrom('dw_other').select('n').where('id', '=', 'o').executeTakeFirst();
    });
    expect(read).toEqual({ n: 7 });
    // The begin goes out with the first statement, as one unit (one round trip).
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(
      /^begin \| with w0 as \(insert into "dw_parent".*\), w1 as \(insert into "dw_child".*\) select "n" from "dw_other"/,
    );
    expect(sent[1]).toBe('commit');
    // The child's parent came in the same statement: its foreign key was checked at the statement's end.
    expect(await parents()).toEqual(['p1']);
    expect(await children()).toEqual(['c1']);
  });

  it('sends the writes first when the next statement reads their table, which then sees them', async () => {
    const seen = await db.transaction().execute(async (trx) => {
      await deferrable(trx.insertInto('dw_parent').values({ id: 'p2' })).execute();
      await deferrable(trx.insertInto('dw_parent').values({ id: 'p3' })).execute();
      return (await trx.selectFrom('dw_parent').select('id').orderBy('id').execute()).map((r) => r.id);
    });
    expect(seen).toEqual(['p2', 'p3']);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^begin \| with w0 as \(insert into "dw_parent".*\) insert into "dw_parent"/);
    expect(sent[1]).toMatch(/^select "id" from "dw_parent"/);
    // Outside a transaction a marked write runs at once.
    await deferrable(db.insertInto('dw_parent').values({ id: 'p4' })).execute();
    expect(await parents()).toEqual(['p2', 'p3', 'p4']);
  });

  it('sends nothing of the writes of a transaction that rolls back', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await deferrable(trx.insertInto('dw_parent').values({ id: 'p5' })).execute();
        throw new Error('changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    // Nothing was sent, so there is nothing to roll back.
    expect(sent).toEqual([]);
    expect(await parents()).toEqual([]);
  });

  it('fails the transaction when a deferred write breaks a constraint', async () => {
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await deferrable(trx.insertInto('dw_child').values({ id: 'orphan', parent_id: 'nobody' })).execute();
        await trx.selectFrom('dw_other').select('n').execute();
      })
      .catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: '23503' });
    expect(await children()).toEqual([]);
  });

  it('refuses to commit a transaction whose error was caught and ignored', async () => {
    const outcome = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('dw_parent').values({ id: 'p6' }).execute();
        await deferrable(trx.insertInto('dw_child').values({ id: 'orphan', parent_id: 'nobody' })).execute();
        await trx
          .selectFrom('dw_other')
          .select('n')
          .execute()
          .catch(() => undefined);
      })
      .then(
        () => 'committed',
        (error: unknown) => (error as Error).message,
      );
    expect(outcome).toBe('The transaction failed on an earlier statement: not committed.');
    expect(await parents()).toEqual([]);
    expect(sent.at(-1)).not.toBe('commit');
  });

  it('sends a transaction of deferred writes alone as one unit, begin to commit', async () => {
    await db.transaction().execute(async (trx) => {
      await deferrable(trx.insertInto('dw_parent').values({ id: 'p7' })).execute();
      await deferrable(trx.insertInto('dw_child').values({ id: 'c7', parent_id: 'p7' })).execute();
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(
      /^begin \| with w0 as \(insert into "dw_parent".*\) insert into "dw_child".* \| commit$/,
    );
    expect(await parents()).toEqual(['p7']);
    expect(await children()).toEqual(['c7']);
  });

  it('commits nothing when the writes sent with the commit fail, and the connection goes on', async () => {
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('dw_parent').values({ id: 'p8' }).execute();
        await deferrable(trx.insertInto('dw_child').values({ id: 'orphan', parent_id: 'nobody' })).execute();
      })
      .catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: '23503' });
    expect(sent.at(-2)).toMatch(/^insert into "dw_child".* \| commit$/);
    expect(sent.at(-1)).toBe('rollback');
    expect(await parents()).toEqual([]);
    // Every connection of the pool still answers, outside a transaction.
    const answers = await Promise.all([1, 2, 3].map(() => sql<{ one: number }>`select 1 as one`.execute(db)));
    expect(answers.map((a) => a.rows[0]?.one)).toEqual([1, 1, 1]);
  });

  it('runs nothing of a unit after its begin fails, and the connection goes on', async () => {
    const connection = await named.connect();
    try {
      // A begin the server refuses, held like any begin and sent with the next statement.
      await connection.query('begin isolation level whenever', []);
      expect(sent).toEqual([]);
      await expect(connection.query('insert into dw_parent (id) values ($1)', ['p9'])).rejects.toMatchObject({
        code: '42601',
      });
      expect(sent).toEqual(['begin isolation level whenever | insert into dw_parent (id) values ($1)']);
      await connection.query('rollback', []);
      const answer = await connection.query<{ one: number }>('select 1 as one', []);
      expect(answer.rows).toEqual([{ one: 1 }]);
    } finally {
      connection.release();
    }
    expect(await parents()).toEqual([]);
  });

  it('names the statement that goes with a begin once it runs often, parsed before the begin', async () => {
    const { seen, prepared } = await db.connection().execute(async (connection) => {
      const values: number[] = [];
      for (let run = 1; run <= 5; run++) {
        const row = await connection
          .transaction()
          .execute((trx) =>
            trx
              .updateTable('dw_other')
              .set({ n: run })
              .where('id', '=', 'o')
              .returning('n')
              .executeTakeFirst(),
          );
        values.push(row?.n ?? -1);
      }
      const named = await sql<{
        name: string;
      }>`select name from pg_prepared_statements where statement like 'update "dw_other"%'`.execute(
        connection,
      );
      return { seen: values, prepared: named.rows };
    });
    // Named from its third run (parsed in that unit, before the begin), then bound by its name alone.
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(sent.filter((text) => text.startsWith('begin | update "dw_other"'))).toHaveLength(5);
    expect(prepared).toHaveLength(1);
    await sql`update dw_other set n = 7 where id = 'o'`.execute(db);
  });

  it('goes on after a rollback to a savepoint, and commits what the savepoint kept', async () => {
    await db.transaction().execute(async (trx) => {
      await deferrable(trx.insertInto('dw_parent').values({ id: 'kept' })).execute();
      await sql`savepoint sp`.execute(trx);
      await deferrable(trx.insertInto('dw_parent').values({ id: 'undone' })).execute();
      const duplicate = await trx
        .insertInto('dw_parent')
        .values({ id: 'kept' })
        .execute()
        .catch((error: unknown) => error);
      expect(duplicate).toMatchObject({ code: '23505' });
      await sql`rollback to savepoint sp`.execute(trx);
      await trx.insertInto('dw_parent').values({ id: 'after' }).execute();
    });
    expect(await parents()).toEqual(['after', 'kept']);
  });

  it('reads its own rows back in the values types pg gives, through a unit as alone', async () => {
    const row = await db.transaction().execute(async (trx) => {
      await trx.insertInto('dw_other').values({ id: 'u1', n: 41 }).execute();
      return trx.selectFrom('dw_other').select(['id', 'n']).where('id', '=', 'u1').executeTakeFirst();
    });
    expect(row).toEqual({ id: 'u1', n: 41 });
    expect(sent[0]).toMatch(/^begin \| insert into "dw_other"/);
    await sql`delete from dw_other where id = 'u1'`.execute(db);
  });
});
