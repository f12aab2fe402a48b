/**
 * Each intake's count of items awaiting review, kept on its row (migration 0044): it follows every
 * submission, approval, request for a revision and deletion, and changes made by hand from another
 * connection, one item or many to a statement; the list answers it from the row, without counting the
 * items; and the intakes there before the migration are counted when it runs.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intakeAwaitingReview } from '../src/db/migrations/0044_intake_awaiting_review.js';
import { intakesAwaitingReviewIndex } from '../src/db/migrations/0046_intakes_awaiting_review_index.js';
import { intakeListFilterIndexes } from '../src/db/migrations/0050_intake_list_filter_indexes.js';
import { listIntakes } from '../src/modules/intakes/intakes.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import {
  connectToPostgres,
  fromAnotherConnection,
  startTestServer,
  systemWorld,
  untilWaitingOnLock,
  type TestServer,
} from './helpers/server.js';
import { planOf, wholeReads } from './helpers/plans.js';
import { recordStatements } from './helpers/statements.js';

interface Listed {
  intakes: { intake_id: string; awaiting_review: number }[];
}
interface Count {
  id: string;
  n: number;
}

const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'tagline', label: 'Tagline', type: 'text' },
  { key: 'website', label: 'Website', type: 'url' },
];

describe.each(DATABASES)('the count of items awaiting review kept on each intake, on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.test_key);
    accountId = account.account_id;
  });
  afterAll(async () => {
    await server.stop();
  });

  const db = () => server.server.services.db.kysely;

  /** Migration 0044 taken down, the indexes on its column (0050's, 0046) first. */
  async function down0044(): Promise<void> {
    if (!intakeListFilterIndexes.down || !intakesAwaitingReviewIndex.down || !intakeAwaitingReview.down) {
      throw new Error('no way down');
    }
    await intakeListFilterIndexes.down(db());
    await intakesAwaitingReviewIndex.down(db());
    await intakeAwaitingReview.down(db());
  }

  async function create(): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Counted for review',
      client: { email: 'client@example.com' },
      items: ITEMS,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  async function submit(id: string, items: string[]): Promise<void> {
    const simulated = await api.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit', items });
    expect(simulated.status, simulated.text).toBe(200);
  }

  /** Every intake's kept count, and the same counted over its items, both sorted by intake. */
  async function keptAndCounted(): Promise<{ kept: Count[]; counted: Count[] }> {
    const kept = await sql<Count>`select id, awaiting_review as n from intakes order by id`.execute(db());
    const counted = await sql<Count>`select intakes.id, (select count(*) from intake_items
        where intake_items.intake_id = intakes.id and intake_items.status = 'submitted') as n
      from intakes order by intakes.id`.execute(db());
    const numbers = (rows: Count[]) => rows.map((r) => ({ id: r.id, n: Number(r.n) }));
    return { kept: numbers(kept.rows), counted: numbers(counted.rows) };
  }

  async function expectKeptAsCounted(): Promise<void> {
    const { kept, counted } = await keptAndCounted();
    expect(kept).toEqual(counted);
  }

  async function listedCount(id: string): Promise<number | undefined> {
    const listed = await api.get<Listed>('/v1/intakes?limit=100');
    expect(listed.status, listed.text).toBe(200);
    return listed.body.intakes.find((i) => i.intake_id === id)?.awaiting_review;
  }

  it('follows submissions, approvals, revisions and deletions, and the list shows it', async () => {
    const id = await create();
    const other = await create();
    expect(await listedCount(id)).toBe(0);

    await submit(id, ['about', 'tagline']);
    await submit(other, ['website']);
    expect(await listedCount(id)).toBe(2);
    expect(await listedCount(other)).toBe(1);
    await expectKeptAsCounted();

    const approved = await api.post(`/v1/intakes/${id}/items/about/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    expect(await listedCount(id)).toBe(1);
    const sentBack = await api.post(`/v1/intakes/${id}/revision`, { item_key: 'tagline', note: 'Shorter.' });
    expect(sentBack.status, sentBack.text).toBe(200);
    expect(await listedCount(id)).toBe(0);
    await submit(id, ['tagline', 'website']);
    expect(await listedCount(id)).toBe(2);
    await expectKeptAsCounted();

    const approvedAll = await api.post(`/v1/intakes/${id}/approve`, {});
    expect(approvedAll.status, approvedAll.text).toBe(200);
    expect(await listedCount(id)).toBe(0);
    expect(await listedCount(other)).toBe(1);
    await expectKeptAsCounted();

    const deleted = await api.delete(`/v1/intakes/${other}`);
    expect(deleted.status, deleted.text).toBeLessThan(300);
    await expectKeptAsCounted();
  });

  it('follows items changed by hand from another connection, one or many to a statement', async () => {
    const id = await create();
    await fromAnotherConnection(
      server,
      sql`update intake_items set status = 'submitted' where intake_id = ${id} and key in ('about', 'website')`,
    );
    expect(await listedCount(id)).toBe(2);
    await fromAnotherConnection(
      server,
      sql`update intake_items set status = 'approved' where intake_id = ${id} and key = 'about'`,
    );
    expect(await listedCount(id)).toBe(1);
    // A status written again as it was moves nothing.
    await fromAnotherConnection(
      server,
      sql`update intake_items set status = 'submitted' where intake_id = ${id} and key = 'website'`,
    );
    expect(await listedCount(id)).toBe(1);
    await fromAnotherConnection(
      server,
      sql`insert into intake_items (intake_id, account_id, livemode, key, position, definition, status, created_at)
        select intake_id, account_id, livemode, 'extra', 9, definition, 'submitted', created_at
        from intake_items where intake_id = ${id} and key = 'about'`,
    );
    expect(await listedCount(id)).toBe(2);
    await fromAnotherConnection(
      server,
      sql`delete from intake_items where intake_id = ${id} and key = 'extra'`,
    );
    expect(await listedCount(id)).toBe(1);
    await fromAnotherConnection(
      server,
      sql`update intake_items set status = 'submitted' where intake_id = ${id}`,
    );
    expect(await listedCount(id)).toBe(3);
    await fromAnotherConnection(server, sql`delete from intake_items where intake_id = ${id}`);
    expect(await listedCount(id)).toBe(0);
    await expectKeptAsCounted();
  });

  it("answers a page's counts from the intakes' rows, without counting their items", async () => {
    const id = await create();
    await submit(id, ['about']);
    const recorder = recordStatements();
    let listed: Awaited<ReturnType<Client['get']>>;
    try {
      listed = await api.get('/v1/intakes');
    } finally {
      recorder.stop();
    }
    expect(listed.status, listed.text).toBe(200);
    const texts = recorder.statements.map((s) => s.sql);
    expect(texts.some((t) => /\bfrom "intakes"/.test(t))).toBe(true);
    expect(texts.filter((t) => /\bfrom "intake_items"/.test(t))).toEqual([]);
  });

  it('walks the index of the intakes awaiting review for the lists that show them first or alone', async () => {
    const waiting = await create();
    await submit(waiting, ['about']);
    const other = await create();
    const world = systemWorld(server, accountId, false);
    const recorder = recordStatements();
    let dashboard: Awaited<ReturnType<typeof listIntakes>>;
    let filtered: Awaited<ReturnType<Client['get']>>;
    try {
      // The dashboard's list, and the API's filter.
      dashboard = await listIntakes(db(), world, { reviewFirst: true, limit: 25, offset: 0 });
      filtered = await api.get('/v1/intakes?awaiting_review=true&limit=100');
    } finally {
      recorder.stop();
    }
    expect(dashboard.rows[0]?.id).toBe(waiting);
    expect(dashboard.rows.map((r) => r.id)).toContain(other);
    expect(filtered.status, filtered.text).toBe(200);
    expect((filtered.body as Listed).intakes.map((i) => i.intake_id)).toContain(waiting);
    expect((filtered.body as Listed).intakes.map((i) => i.intake_id)).not.toContain(other);
    // The page and the count of those awaiting review, for each list: by a partial index of them (a
    // count may take the one by status, as small), never a walk of the account's intakes.
    const reads = recorder.statements.filter(
      (s) => /\bfrom "intakes"/.test(s.sql) && /"awaiting_review" > 0\b/.test(s.sql),
    );
    expect(reads.length).toBeGreaterThanOrEqual(3);
    for (const read of reads) {
      const steps = await planOf(db(), database, read);
      const partial = /\border by\b/.test(read.sql)
        ? /intakes_awaiting_review_created_id/
        : /intakes_awaiting_review_(status_)?created_id/;
      expect(steps.join('\n'), read.sql).toMatch(partial);
      expect(await wholeReads(db(), database, steps, ['intakes']), steps.join('\n')).toEqual([]);
    }
  });

  it('counts the items there before the migration, and drops the count on the way down', async () => {
    const id = await create();
    await submit(id, ['about', 'website']);
    await down0044();
    try {
      const columns = await sql<{ awaiting_review?: number }>`select * from intakes where id = ${id}`.execute(
        db(),
      );
      expect(columns.rows[0]).not.toHaveProperty('awaiting_review');
      // Written while nothing keeps the count: counted when the migration runs again.
      await fromAnotherConnection(
        server,
        sql`update intake_items set status = 'submitted' where intake_id = ${id} and key = 'tagline'`,
      );
    } finally {
      await intakeAwaitingReview.up(db());
      await intakesAwaitingReviewIndex.up(db());
      await intakeListFilterIndexes.up(db());
    }
    expect(await listedCount(id)).toBe(3);
    await expectKeptAsCounted();
    await fromAnotherConnection(
      server,
      sql`update intake_items set status = 'approved' where intake_id = ${id} and key = 'about'`,
    );
    expect(await listedCount(id)).toBe(2);
  });

  // PostgreSQL only (SQLite has one writer at a time), defined only there, so nothing is skipped.
  if (database === 'postgres') {
    it('counts an item submitted by another connection while the migration runs', async () => {
      const id = await create();
      await down0044();
      const writer = await connectToPostgres(server.env.DATABASE_URL);
      let migrated: Promise<void> | undefined;
      try {
        // The item's submission is under way, not committed, when the migration starts: the
        // migration waits for it, then counts it.
        await writer.query('begin');
        await writer.query(
          "update intake_items set status = 'submitted' where intake_id = $1 and key = 'about'",
          [id],
        );
        migrated = intakeAwaitingReview.up(db());
        // Committed once the migration waits for the submission's lock on the items' table (at its
        // lock, or failing that at its triggers' creation), not after a guessed delay.
        await untilWaitingOnLock(writer, 'intake_items', 'the migration never waited for the submission');
        await writer.query('commit');
        await migrated;
        await intakesAwaitingReviewIndex.up(db());
        await intakeListFilterIndexes.up(db());
      } finally {
        await writer.query('rollback').catch(() => undefined);
        await writer.end();
        await migrated?.catch(() => undefined);
      }
      expect(await listedCount(id)).toBe(1);
      await expectKeptAsCounted();
    });
  }
});
