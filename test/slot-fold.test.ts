import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import { foldSlots } from '../src/db/slot-fold.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DATABASES } from './helpers/env.js';
import { connectToPostgres, openTestDatabase } from './helpers/server.js';

/**
 * The slots' fold (src/db/slot-fold.ts): the intakes' counts and the account versions, spread over
 * slots on PostgreSQL, folded into slot 0 with every sum kept, past rows that writers hold.
 */
describe.each(DATABASES)('the slots folded on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
    db = opened.db;
  });

  afterAll(async () => {
    await opened.close();
  });

  const newAccount = async () =>
    (
      await createAccount(
        db.kysely,
        { email: `fold-${Math.random().toString(36).slice(2)}@example.com`, plan: 'agency' },
        new Date().toISOString(),
      )
    ).account_id;

  /** An account's count rows, by mode and status, in the given slots. */
  const countRows = (account: string, rows: readonly [number, string, number, number][]) =>
    sql`insert into intake_counts (account_id, livemode, status, slot, n) values ${sql.join(
      rows.map(([livemode, status, slot, n]) => sql`(${account}, ${livemode}, ${status}, ${slot}, ${n})`),
    )}`.execute(db.kysely);

  const countsOf = async (account: string) =>
    (
      await sql<{ livemode: number; status: string; slot: number; n: number }>`
        select livemode, status, slot, n from intake_counts where account_id = ${account}
        order by livemode, status, slot`.execute(db.kysely)
    ).rows;

  const summed = (rows: readonly { livemode: number; status: string; n: number }[]) => {
    const sums = new Map<string, number>();
    for (const row of rows) {
      const key = `${row.livemode} ${row.status}`;
      sums.set(key, (sums.get(key) ?? 0) + Number(row.n));
    }
    return Object.fromEntries(sums);
  };

  const versionSlots = async (account: string) =>
    (
      await sql<{ slot: number }>`select slot from answer_versions where account_id = ${account}`.execute(
        db.kysely,
      )
    ).rows.map((row) => row.slot);

  if (database === 'sqlite')
    it('has nothing to fold on SQLite (one slot)', async () => {
      const account = await newAccount();
      await countRows(account, [[1, 'sent', 0, 2]]);
      await foldSlots(db);
      expect(await countsOf(account)).toEqual([{ livemode: 1, status: 'sent', slot: 0, n: 2 }]);
    });

  // PostgreSQL only, defined only there so that nothing is skipped.
  if (database === 'postgres') {
    it("folds every slot's row into slot 0, each count and version summing as before", async () => {
      const account = await newAccount();
      const other = await newAccount();
      await countRows(account, [
        [1, 'sent', 0, 4],
        [1, 'sent', 3, 2],
        [1, 'sent', 7, -1],
        [0, 'draft', 5, 1],
      ]);
      await countRows(other, [[1, 'submitted', 9, 3]]);
      // Added to what the account's creation wrote, which may be in one of these slots.
      await sql`insert into answer_versions (account_id, slot, version)
        values (${account}, 3, 10), (${account}, 9, 5)
        on conflict (account_id, slot) do update set version = answer_versions.version + excluded.version`.execute(
        db.kysely,
      );
      const before = summed(await countsOf(account));
      const version = await db.readAnswerVersion?.(account);

      // One row a statement: the fold goes on batch after batch until none is left.
      await foldSlots(db, 1);

      const after = await countsOf(account);
      expect(summed(after)).toEqual(before);
      expect(after.map((row) => row.slot)).toEqual([0, 0]);
      expect(await countsOf(other)).toEqual([{ livemode: 1, status: 'submitted', slot: 0, n: 3 }]);
      expect(await versionSlots(account)).toEqual([0]);
      // No count changed: the account's version stands, so its kept answers do.
      expect(await db.readAnswerVersion?.(account)).toBe(version);
    });

    it('leaves the rows a writer holds, without waiting for it, and folds them next time', async () => {
      const account = await newAccount();
      await countRows(account, [
        [1, 'sent', 0, 1],
        [1, 'sent', 4, 1],
        [1, 'approved', 6, 1],
      ]);
      const writer = await connectToPostgres(opened.env.DATABASE_URL);
      try {
        // A writer's open transaction holds the row of slot 4 (and its own version's row).
        await writer.query('begin');
        await writer.query(
          "update intake_counts set n = n + 1 where account_id = $1 and status = 'sent' and slot = 4",
          [account],
        );
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the fold waited for the writer')), 3_000);
        });
        try {
          await Promise.race([foldSlots(db), waited]);
        } finally {
          clearTimeout(timer);
        }
        expect((await countsOf(account)).map((row) => [row.status, row.slot])).toEqual([
          ['approved', 0],
          ['sent', 0],
          ['sent', 4],
        ]);
        await writer.query('commit');
      } finally {
        await writer.end();
      }
      await foldSlots(db);
      expect(await countsOf(account)).toEqual([
        { livemode: 1, status: 'approved', slot: 0, n: 1 },
        { livemode: 1, status: 'sent', slot: 0, n: 3 },
      ]);
    });
  }
});
