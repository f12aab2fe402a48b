/**
 * The list's total from kept counts, and pages by cursor (`GET /v1/intakes`): the counts follow every
 * creation, send, archive and deletion, and a change made by hand from another connection; the list's
 * total (unfiltered or by status) reads them instead of counting the account's intakes; the intakes
 * there before the counts were kept are counted when the migration runs, and counted again (drift
 * mended, writers held off) by migration 0045; and `starting_after` walks
 * the list in its order, page by page, refusing an intake of another account or mode.
 */
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intakeCounts } from '../src/db/migrations/0040_intake_counts.js';
import { intakeCountSlots, SLOTS } from '../src/db/migrations/0041_intake_count_slots.js';
import { intakeCountsRecounted } from '../src/db/migrations/0045_intake_counts_recounted.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import {
  connectToPostgres,
  fromAnotherConnection,
  startTestServer,
  untilWaitingOnLock,
  type TestServer,
} from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

interface List {
  total: number;
  has_more: boolean;
  intakes: { intake_id: string; status: string }[];
}
interface Count {
  account_id: string;
  livemode: number;
  status: string;
  n: number;
}

const ITEM = { key: 'about', label: 'About you', type: 'longtext' };

describe.each(DATABASES)('the intake list’s counts and cursor on %s', (database) => {
  let server: TestServer;
  let one: { id: string; live: Client; test: Client };
  let two: { id: string; live: Client };

  beforeAll(async () => {
    server = await startTestServer(database);
    const first = await server.createAccount({ plan: 'agency' });
    const second = await server.createAccount({ plan: 'agency' });
    one = {
      id: first.account_id,
      live: client(server.url, first.live_key),
      test: client(server.url, first.test_key),
    };
    two = { id: second.account_id, live: client(server.url, second.live_key) };
  });
  afterAll(async () => {
    await server.stop();
  });

  const db = () => server.server.services.db.kysely;

  async function create(api: Client, send: boolean): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Counted',
      client: { email: 'client@example.com' },
      items: [ITEM],
      send,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  /** The kept counts (those not at zero) and the same counted over the intakes, sorted alike. */
  async function keptAndCounted(): Promise<{ kept: Count[]; counted: Count[] }> {
    const order = (rows: Count[]) =>
      rows
        .map((r) => ({ ...r, livemode: Number(r.livemode), n: Number(r.n) }))
        .sort((a, b) =>
          `${a.account_id} ${a.livemode} ${a.status}`.localeCompare(
            `${b.account_id} ${b.livemode} ${b.status}`,
          ),
        );
    // A count is the sum of its slots (one per writing connection on PostgreSQL).
    const kept = await sql<Count>`select account_id, livemode, status, sum(n) as n from intake_counts
      group by account_id, livemode, status having sum(n) <> 0`.execute(db());
    const counted = await sql<Count>`select account_id, livemode, status, count(*) as n from intakes
      group by account_id, livemode, status`.execute(db());
    return { kept: order(kept.rows), counted: order(counted.rows) };
  }

  it('keeps the counts per account, mode and status through every change of an intake', async () => {
    const drafts = [
      await create(one.live, false),
      await create(one.live, false),
      await create(one.live, false),
    ];
    const sent = [await create(one.live, true), await create(one.live, true)];
    await create(one.test, true);
    await create(two.live, true);
    expect((await one.live.post(`/v1/intakes/${drafts[0]}/send`)).status).toBe(200);
    expect((await one.live.post(`/v1/intakes/${sent[0]}/archive`)).status).toBe(200);
    expect((await one.live.delete(`/v1/intakes/${drafts[1]}`)).status).toBeLessThan(300);

    const { kept, counted } = await keptAndCounted();
    expect(kept).toEqual(counted);
    expect(kept.filter((c) => c.account_id === one.id && c.livemode === 1)).toEqual([
      { account_id: one.id, livemode: 1, status: 'archived', n: 1 },
      { account_id: one.id, livemode: 1, status: 'draft', n: 1 },
      { account_id: one.id, livemode: 1, status: 'sent', n: 2 },
    ]);

    // The list answers them: every status, one status, each mode and account on its own.
    const totalOf = async (api: Client, query = '') =>
      (await api.get<List>(`/v1/intakes${query}`)).body.total;
    expect(await totalOf(one.live)).toBe(4);
    expect(await totalOf(one.live, '?status=sent')).toBe(2);
    expect(await totalOf(one.live, '?status=completed')).toBe(0);
    expect(await totalOf(one.test)).toBe(1);
    expect(await totalOf(two.live)).toBe(1);

    // A change by hand, from another connection, moves them too, and the list's next answer shows it.
    await fromAnotherConnection(server, sql`update intakes set status = 'completed' where id = ${sent[1]}`);
    expect(await totalOf(one.live, '?status=sent')).toBe(1);
    expect(await totalOf(one.live, '?status=completed')).toBe(1);
    expect(await totalOf(one.live)).toBe(4);
    await fromAnotherConnection(server, sql`delete from intakes where id = ${sent[1]}`);
    expect(await totalOf(one.live, '?status=completed')).toBe(0);
    expect(await totalOf(one.live)).toBe(3);
    const after = await keptAndCounted();
    expect(after.kept).toEqual(after.counted);
  });

  it('counts intakes written many to a statement: a bulk insert, update and delete', async () => {
    const account = await server.createAccount({ plan: 'agency' });
    const live = client(server.url, account.live_key);
    await create(live, true);
    // 600 intakes in one statement, two statuses, from another connection.
    await fromAnotherConnection(
      server,
      sql`
      with recursive series(i) as (select 1 union all select i + 1 from series where i < 600)
      insert into intakes (id, account_id, livemode, project_name, client_email, client_language, status,
        chase_schedule, retention_mode, retention_anonymize, created_at, updated_at)
      select 'in_bulk_' || ${account.account_id} || '_' || i, ${account.account_id}, 1, 'Bulk', 'bulk@example.com',
        'en', case when i % 3 = 0 then 'completed' else 'sent' end, '{}', 'keep', 0,
        '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'
      from series`,
    );
    const totalOf = async (query = '') => (await live.get<List>(`/v1/intakes${query}`)).body.total;
    expect(await totalOf()).toBe(601);
    expect(await totalOf('?status=sent')).toBe(401);
    expect(await totalOf('?status=completed')).toBe(200);
    await fromAnotherConnection(
      server,
      sql`update intakes set status = 'archived' where account_id = ${account.account_id} and status = 'completed'`,
    );
    expect(await totalOf('?status=archived')).toBe(200);
    expect(await totalOf('?status=completed')).toBe(0);
    await fromAnotherConnection(
      server,
      sql`delete from intakes where account_id = ${account.account_id} and project_name = 'Bulk' and status = 'sent'`,
    );
    expect(await totalOf()).toBe(201);
    expect(await totalOf('?status=sent')).toBe(1);
    const { kept, counted } = await keptAndCounted();
    expect(kept).toEqual(counted);
  });

  it("answers the total without counting the account's intakes", async () => {
    await create(one.live, true);
    for (const query of ['', '?status=sent', '?limit=1', '?status=draft&offset=50']) {
      const recorder = recordStatements();
      let answer: Awaited<ReturnType<Client['get']>>;
      try {
        answer = await one.live.get(`/v1/intakes${query}`);
      } finally {
        recorder.stop();
      }
      expect(answer.status, answer.text).toBe(200);
      const texts = recorder.statements.map((s) => s.sql);
      if (texts.some((t) => /\bfrom "intakes"/.test(t))) {
        expect(
          texts.some((t) => /\bfrom "intake_counts"/.test(t)),
          query,
        ).toBe(true);
      }
      expect(
        texts.filter((t) => /count\(\*\) as "n" from "intakes"/.test(t)),
        query,
      ).toEqual([]);
    }
  });

  it('counts the intakes there before the migration, and drops its part on the way down', async () => {
    await create(one.live, false);
    await create(two.live, true);
    if (!intakeCounts.down || !intakeCountSlots.down)
      throw new Error('migrations 0040 and 0041 have a way down');
    await intakeCountSlots.down(db());
    // Migration 0040's counts, one row per account, mode and status, follow the writes.
    await create(one.live, true);
    const unslotted = await keptAndCounted();
    expect(unslotted.kept).toEqual(unslotted.counted);
    await intakeCounts.down(db());
    await create(one.live, true);
    expect((await one.live.delete(`/v1/intakes/${await create(one.live, false)}`)).status).toBeLessThan(300);
    await intakeCounts.up(db());
    const { kept, counted } = await keptAndCounted();
    expect(kept).toEqual(counted);
    await intakeCountSlots.up(db());
    await create(one.live, true);
    expect((await one.live.delete(`/v1/intakes/${await create(one.live, true)}`)).status).toBeLessThan(300);
    const again = await keptAndCounted();
    expect(again.kept).toEqual(again.counted);
  });

  it('counts every intake again (migration 0045), mending counts that drifted, all in slot 0', async () => {
    await create(one.live, true);
    await create(two.live, false);
    // Counts off as an intake written while migration 0040 ran would leave them: one too many, one missing.
    await fromAnotherConnection(server, sql`update intake_counts set n = n + 3 where account_id = ${two.id}`);
    await fromAnotherConnection(
      server,
      sql`delete from intake_counts where account_id = ${one.id} and livemode = 1 and status = 'sent'`,
    );
    const drifted = await keptAndCounted();
    expect(drifted.kept).not.toEqual(drifted.counted);

    await intakeCountsRecounted.up(db());
    const { kept, counted } = await keptAndCounted();
    expect(kept).toEqual(counted);
    const slots = await sql<{ slot: number }>`select distinct slot from intake_counts`.execute(db());
    expect(slots.rows.map((r) => Number(r.slot))).toEqual([0]);
    const sentOfOne = counted.find((c) => c.account_id === one.id && c.livemode === 1 && c.status === 'sent');
    expect((await one.live.get<List>('/v1/intakes?status=sent')).body.total).toBe(sentOfOne?.n);
    // The triggers go on from the new counts.
    await create(one.live, true);
    const after = await keptAndCounted();
    expect(after.kept).toEqual(after.counted);
  });

  // PostgreSQL only: SQLite's one write lock holds every writer off already.
  if (database === 'postgres')
    it("holds the intakes' writers off while it counts them again (migration 0045)", async () => {
      const watcher = await connectToPostgres(server.env.DATABASE_URL);
      try {
        let creation: Promise<string> | undefined;
        await db()
          .transaction()
          .execute(async (trx) => {
            await intakeCountsRecounted.up(trx);
            // A creation started now waits for the recount's lock on the intakes' table…
            creation = create(one.live, true);
            await untilWaitingOnLock(watcher, 'intakes', 'the creation never waited for the recount');
          });
        // …and is counted once it commits after it.
        await creation;
        const { kept, counted } = await keptAndCounted();
        expect(kept).toEqual(counted);
      } finally {
        await watcher.end();
      }
    });

  // PostgreSQL only (SQLite has one writer at a time), defined only there, so nothing is skipped.
  if (database === 'postgres')
    it("lets two connections create intakes of one account at once, neither waiting for the other's commit", async () => {
      const intakeId = await create(one.live, true);
      const connect = async () => {
        const connection = await connectToPostgres(server.env.DATABASE_URL);
        const { rows } = await connection.query<{ pid: number }>('select pg_backend_pid() as pid');
        return { connection, slot: (rows[0]?.pid ?? 0) % SLOTS };
      };
      // Two connections of different slots (a third is opened if the first two share one).
      const connections = [await connect(), await connect()];
      while (connections[0]?.slot === connections.at(-1)?.slot) connections.push(await connect());
      const [first, second] = [connections[0]?.connection, connections.at(-1)?.connection];
      if (!first || !second) throw new Error('no connections');
      /** A copy of the intake under a new id, inserted in the connection's open transaction. */
      const copy = async (connection: pg.Client, id: string) => {
        await connection.query('begin');
        await connection.query("set local lock_timeout = '2s'");
        await connection.query(
          'create temp table copied on commit drop as select * from intakes where id = $1',
          [intakeId],
        );
        await connection.query('update copied set id = $1', [id]);
        await connection.query('insert into intakes select * from copied');
      };
      try {
        const before = (await one.live.get<List>('/v1/intakes?status=sent')).body.total;
        await copy(first, `${intakeId}_first`);
        // The first has not committed: with one count row, this insert would wait for it, then time out.
        await copy(second, `${intakeId}_second`);
        await second.query('commit');
        await first.query('commit');
        expect((await one.live.get<List>('/v1/intakes?status=sent')).body.total).toBe(before + 2);
        const { kept, counted } = await keptAndCounted();
        expect(kept).toEqual(counted);
      } finally {
        for (const { connection } of connections) await connection.end();
      }
    });

  it('walks the list page by page with starting_after, in the order of the whole list', async () => {
    const account = await server.createAccount({ plan: 'agency' });
    const live = client(server.url, account.live_key);
    for (let i = 0; i < 5; i++) await create(live, i % 2 === 0);
    const whole = await live.get<List>('/v1/intakes?limit=100');
    expect(whole.body).toMatchObject({ total: 5, has_more: false });
    const order = whole.body.intakes.map((i) => i.intake_id);

    const walked: string[] = [];
    const more: boolean[] = [];
    let cursor: string | undefined;
    do {
      const page = await live.get<List>(`/v1/intakes?limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(page.status, page.text).toBe(200);
      expect(page.body.total).toBe(5);
      walked.push(...page.body.intakes.map((i) => i.intake_id));
      more.push(page.body.has_more);
      cursor = page.body.has_more ? page.body.intakes.at(-1)?.intake_id : undefined;
    } while (cursor);
    expect(walked).toEqual(order);
    expect(more).toEqual([true, true, false]);

    // With a filter: the filter's total, the filtered intakes after the cursor.
    const sent = (await live.get<List>('/v1/intakes?status=sent')).body.intakes.map((i) => i.intake_id);
    expect(sent).toHaveLength(3);
    const rest = await live.get<List>(`/v1/intakes?status=sent&starting_after=${sent[0]}`);
    expect(rest.body).toMatchObject({ total: 3, has_more: false });
    expect(rest.body.intakes.map((i) => i.intake_id)).toEqual(sent.slice(1));
    const byEmail = await live.get<List>(
      `/v1/intakes?client_email=client@example.com&limit=1&starting_after=${order[3]}`,
    );
    expect(byEmail.body).toMatchObject({ total: 5, has_more: false, intakes: [{ intake_id: order[4] }] });
    const byText = await live.get<List>(`/v1/intakes?q=counted&limit=2&starting_after=${order[0]}`);
    expect(byText.body).toMatchObject({ total: 5, has_more: true });
    expect(byText.body.intakes.map((i) => i.intake_id)).toEqual(order.slice(1, 3));
    // A folder holding the second, third and fifth: the folder's total, its intakes after the cursor.
    const folder = await live.post<{ id: string }>('/v1/folders', { name: 'Paged' });
    expect(folder.status, folder.text).toBe(201);
    for (const id of [order[1], order[2], order[4]]) {
      expect((await live.patch(`/v1/intakes/${id}`, { folder_id: folder.body.id })).status).toBe(200);
    }
    const inFolder = await live.get<List>(
      `/v1/intakes?folder_id=${folder.body.id}&starting_after=${order[1]}`,
    );
    expect(inFolder.body).toMatchObject({ total: 3, has_more: false });
    expect(inFolder.body.intakes.map((i) => i.intake_id)).toEqual([order[2], order[4]]);
  });

  it('refuses a cursor of no intake of the list, and a cursor with an offset', async () => {
    const own = await create(one.live, true);
    const others = await create(two.live, true);
    const testOne = await create(one.test, true);
    for (const cursor of ['in_doesnotexist', others, testOne]) {
      const answer = await one.live.get(`/v1/intakes?starting_after=${cursor}`);
      expectError(answer, 400, 'invalid_request');
      expect(answer.text).toContain('starting_after');
    }
    expectError(await one.live.get(`/v1/intakes?starting_after=${own}&offset=1`), 400, 'invalid_request');
    expect((await one.live.get(`/v1/intakes?starting_after=${own}&offset=0`)).status).toBe(200);
  });
});
