import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../src/db/database.js';
import { jobBacklog } from '../src/jobs/admin.js';
import { GAVE_UP_LOCKED_UNTIL } from '../src/jobs/jobs.js';

/** A statement that reads nothing and takes a while: counts to three million. */
const SLOW = sql<{
  n: number;
}>`with recursive c(i) as (select 1 union all select i + 1 from c where i < 3000000) select count(*) as n from c`;

describe('reads aside on SQLite', () => {
  let dataDir: string;
  let db: Db;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'aside-'));
    db = openDatabase({ databaseUrl: undefined, dataDir });
    await migrateToLatest(db);
  });

  afterAll(async () => {
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs beside the event loop: a timer set after the read began fires before its rows come', async () => {
    const order: string[] = [];
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        order.push('timer');
        resolve();
      }, 5),
    );
    const rows = await db.readAside(SLOW.compile(db.kysely)).then((found) => {
      order.push('rows');
      return found;
    });
    await timer;
    expect(rows).toEqual([{ n: 3_000_000 }]);
    // On the main connection the statement holds the loop: the rows come first, then the timer.
    expect(order).toEqual(['timer', 'rows']);
  });

  it('sees what the main connection committed before it, and sums up the job table as the main connection would', async () => {
    const now = Date.now();
    const job = (id: string, kind: string, dueAt: number, lockedUntil: number | null) => ({
      id,
      account_id: 'system',
      livemode: 1,
      kind,
      subject_id: id,
      payload: '{}',
      due_at: dueAt,
      locked_until: lockedUntil,
      created_at: new Date(now).toISOString(),
    });
    await db.kysely
      .insertInto('jobs')
      .values([
        job('job_due', 'aside_probe', now - 60_000, null),
        job('job_later', 'aside_probe', now + 60_000, null),
        job('job_running', 'aside_probe', now - 1_000, now + 30_000),
        job('job_failed', 'aside_probe', now - 120_000, GAVE_UP_LOCKED_UNTIL),
      ])
      .execute();
    const backlog = (await jobBacklog(db, now)).find((row) => row.kind === 'aside_probe');
    expect(backlog).toEqual({
      kind: 'aside_probe',
      queued: 2,
      running: 1,
      failed: 1,
      oldestDueLagMs: 60_000,
    });
  });

  it('rejects a statement that fails, and goes on', async () => {
    await expect(db.readAside(sql`select * from no_such_table`.compile(db.kysely))).rejects.toThrow(
      /no such table/,
    );
    expect(await db.readAside(sql<{ one: number }>`select 1 as one`.compile(db.kysely))).toEqual([
      { one: 1 },
    ]);
  });

  it('refuses to write: its connection is read-only', async () => {
    await expect(db.readAside(sql`delete from jobs returning id`.compile(db.kysely))).rejects.toThrow(
      /readonly/i,
    );
    expect(
      await db.kysely.selectFrom('jobs').select('id').where('kind', '=', 'aside_probe').execute(),
    ).toHaveLength(4);
  });
});
