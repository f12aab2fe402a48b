/**
 * The caller's cold reads of an intake (GET /v1/intakes/:id and its /status) read fewer statements:
 * the client's reminder state and suppression come with the intake's row, the recipients' suppression
 * with theirs, and parsed item definitions are kept by their text. These tests hold what the answers
 * must still say: whose address is suppressed in which world, an edited item read back as edited, and
 * another account's or mode's intake not found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface Recipient {
  email: string;
  role: 'client' | 'also_notify';
  opted_out_at: string | null;
  suppressed: boolean;
  stalled_at: string | null;
}
interface Item {
  key: string;
  label: string;
  required: boolean;
  constraints: Record<string, unknown>;
  help: string | null;
}
interface Intake {
  id: string;
  items: Item[];
  recipients: Recipient[];
}
interface Status {
  items: { key: string; label: string }[];
  progress: { total: number };
  recipients: Recipient[];
}

const unique = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}@example.test`;
const ITEM = { key: 'about', label: 'About you', type: 'longtext', constraints: { max_chars: 200 } };

describe.each(DATABASES)('cold reads of an intake on %s', (database) => {
  let server: TestServer;
  let accountId: string;
  let live: Client;
  let test: Client;
  let other: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    const another = await server.createAccount({ plan: 'agency' });
    other = client(server.url, another.live_key);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function create(api: Client, body: Record<string, unknown>): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Brand kit',
      client: { email: unique('client') },
      items: [ITEM],
      send: false,
      ...body,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  async function reads(api: Client, id: string): Promise<{ intake: Intake; status: Status }> {
    const intake = await api.get<Intake>(`/v1/intakes/${id}`);
    expect(intake.status, intake.text).toBe(200);
    const status = await api.get<Status>(`/v1/intakes/${id}/status`);
    expect(status.status, status.text).toBe(200);
    return { intake: intake.body, status: status.body };
  }

  it("shows the client's and each recipient's reminder state and suppression of the intake's own world", async () => {
    const clientEmail = unique('client');
    const ana = unique('ana');
    const ben = unique('ben');
    const cleo = unique('cleo');
    const id = await create(live, {
      client: { email: clientEmail },
      also_notify: [{ email: ana }, { email: ben }, { email: cleo }],
    });
    const db = server.server.services.db.kysely;
    const at = new Date().toISOString();
    const suppression = (address: string, account: string, livemode: number) => ({
      account_id: account,
      livemode,
      address,
      reason: 'bounce',
      message_id: null,
      created_at: at,
    });
    const otherAccount = (await server.createAccount({ plan: 'agency' })).account_id;
    await db
      .insertInto('suppressions')
      .values([
        // Suppressed in the intake's world (live): the client and ana.
        suppression(clientEmail, accountId, 1),
        suppression(ana, accountId, 1),
        // Ben only in the account's test mode, cleo only in another account: neither counts here.
        suppression(ben, accountId, 0),
        suppression(cleo, otherAccount, 1),
      ])
      .execute();
    const before = await reads(live, id);
    const expected = [
      { email: clientEmail, role: 'client', suppressed: true, opted_out_at: null, stalled_at: null },
      { email: ana, role: 'also_notify', suppressed: true },
      { email: ben, role: 'also_notify', suppressed: false },
      { email: cleo, role: 'also_notify', suppressed: false },
    ];
    expect(before.intake.recipients).toMatchObject(expected);
    expect(before.status.recipients).toEqual(before.intake.recipients);

    // The client's reminder state is the chase plan's (a draft has one from its creation).
    const optedOut = '2026-01-02T03:04:05.000Z';
    const stalled = '2026-01-03T03:04:05.000Z';
    const planned = await db
      .updateTable('chase_plans')
      .set({ opted_out_at: optedOut, stalled_at: stalled })
      .where('intake_id', '=', id)
      .executeTakeFirst();
    expect(Number(planned.numUpdatedRows)).toBe(1);
    await db.deleteFrom('suppressions').where('address', '=', clientEmail).execute();
    const after = await reads(live, id);
    expect(after.intake.recipients[0]).toMatchObject({
      email: clientEmail,
      suppressed: false,
      opted_out_at: optedOut,
      stalled_at: stalled,
    });
    expect(after.status.recipients).toEqual(after.intake.recipients);

    // Without a chase plan the client's state is empty, as before.
    await db.deleteFrom('chase_plans').where('intake_id', '=', id).execute();
    const planless = await reads(live, id);
    expect(planless.intake.recipients[0]).toMatchObject({ opted_out_at: null, stalled_at: null });
    expect(planless.status.recipients).toEqual(planless.intake.recipients);
  });

  it('reads an edited item back as edited, and leaves an identical item of another intake as it was', async () => {
    const first = await create(live, {});
    const second = await create(live, {});
    // Both read once: their identical definitions are parsed (and kept) before the edit.
    for (const id of [first, second]) {
      const { intake, status } = await reads(live, id);
      expect(intake.items[0]).toMatchObject({ label: 'About you', constraints: { max_chars: 200 } });
      expect(status.items[0]?.label).toBe('About you');
    }

    const edited = await live.patch(`/v1/intakes/${first}/items/about`, {
      label: 'About your company',
      help: 'Two lines',
      constraints: { max_chars: 500 },
    });
    expect(edited.status, edited.text).toBe(200);
    const afterEdit = await reads(live, first);
    expect(afterEdit.intake.items[0]).toMatchObject({
      label: 'About your company',
      help: 'Two lines',
      constraints: { max_chars: 500 },
    });
    expect(afterEdit.status.items[0]?.label).toBe('About your company');
    const untouched = await reads(live, second);
    expect(untouched.intake.items[0]).toMatchObject({
      label: 'About you',
      help: null,
      constraints: { max_chars: 200 },
    });
    expect(untouched.status.items[0]?.label).toBe('About you');

    // Back to the first text: read as that again.
    const reverted = await live.patch(`/v1/intakes/${first}/items/about`, {
      label: 'About you',
      help: null,
      constraints: { max_chars: 200 },
    });
    expect(reverted.status, reverted.text).toBe(200);
    expect((await reads(live, first)).intake.items[0]).toEqual(untouched.intake.items[0]);

    // An added item shows in both reads.
    const added = await live.post(`/v1/intakes/${first}/items`, {
      items: [{ key: 'site', label: 'Website', type: 'url', required: false }],
    });
    expect(added.status, added.text).toBe(201);
    const withAdded = await reads(live, first);
    expect(withAdded.intake.items.map((i) => i.key)).toEqual(['about', 'site']);
    expect(withAdded.status.items.map((i) => i.label)).toEqual(['About you', 'Website']);
  });

  it("lists a page with the world's total, an offset past the end too", async () => {
    const account = await server.createAccount({ plan: 'agency' });
    const own = client(server.url, account.live_key);
    const ownTest = client(server.url, account.test_key);
    type List = { total: number; has_more: boolean; intakes: { intake_id: string }[] };
    expect((await own.get<List>('/v1/intakes')).body).toEqual({ total: 0, has_more: false, intakes: [] });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await create(own, {}));
    await create(ownTest, {});
    const page = await own.get<List>('/v1/intakes?limit=2');
    expect(page.status, page.text).toBe(200);
    expect(page.body.total).toBe(3);
    expect(page.body.has_more).toBe(true);
    expect(page.body.intakes.map((i) => i.intake_id)).toEqual([ids[2], ids[1]]);
    expect(Object.keys(page.body.intakes[0] ?? {}).sort()).toEqual(
      [
        'awaiting_review',
        'clientEmail',
        'createdAt',
        'id',
        'intake_id',
        'portal_url',
        'projectName',
        'status',
      ].sort(),
    );
    const last = await own.get<List>('/v1/intakes?limit=2&offset=2');
    expect(last.body).toMatchObject({ total: 3, has_more: false, intakes: [{ intake_id: ids[0] }] });
    expect((await own.get<List>('/v1/intakes?offset=5')).body).toEqual({
      total: 3,
      has_more: false,
      intakes: [],
    });
    expect((await ownTest.get<List>('/v1/intakes')).body.total).toBe(1);
  });

  it("answers 404 for another account's or mode's intake", async () => {
    const id = await create(live, {});
    await reads(live, id);
    for (const api of [other, test]) {
      expectError(await api.get(`/v1/intakes/${id}`), 404, 'not_found');
      expectError(await api.get(`/v1/intakes/${id}/status`), 404, 'not_found');
    }
  });
});
