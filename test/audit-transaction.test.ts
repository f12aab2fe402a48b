import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf } from './helpers/dashboard.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { signedInOwner } from './helpers/signed-in.js';

/**
 * An audit insert that fails (here: a trigger refuses every entry) must take the change down with it:
 * the entry is written in the change's transaction, so the caller's 500 means nothing happened.
 */
describe.each(DATABASES)('audit entries in the change transaction on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await server.stop();
  });
  afterEach(async () => {
    await allowAudit();
  });

  const db = () => server.server.services.db.kysely;

  async function refuseAudit(): Promise<void> {
    if (database === 'sqlite') {
      await sql`create trigger refuse_audit before insert on audit_entries
        begin select raise(abort, 'audit refused'); end`.execute(db());
      return;
    }
    await sql`create or replace function refuse_audit() returns trigger language plpgsql as
      $$ begin raise exception 'audit refused'; end $$`.execute(db());
    await sql`create trigger refuse_audit before insert on audit_entries
      for each row execute function refuse_audit()`.execute(db());
  }

  async function allowAudit(): Promise<void> {
    if (database === 'sqlite') await sql`drop trigger if exists refuse_audit`.execute(db());
    else await sql`drop trigger if exists refuse_audit on audit_entries`.execute(db());
  }

  async function draft(): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Audited',
      client: { email: 'dana@example.com' },
      items: [{ key: 'about', label: 'About you', type: 'text' }],
      send: false,
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  async function eventsOf(id: string): Promise<string[]> {
    const rows = await db().selectFrom('events').select('type').where('intake_id', '=', id).execute();
    return rows.map((r) => r.type);
  }

  async function auditOf(id: string): Promise<string[]> {
    const rows = await db()
      .selectFrom('audit_entries')
      .select('action')
      .where('resource_id', '=', id)
      .orderBy('created_at')
      .execute();
    return rows.map((r) => r.action);
  }

  it('a send whose audit entry fails is not sent', async () => {
    const id = await draft();
    await refuseAudit();
    expectError(await api.post(`/v1/intakes/${id}/send`), 500, 'internal_error');
    await allowAudit();
    expect((await api.get<{ status: string }>(`/v1/intakes/${id}`)).body.status).toBe('draft');
    expect(await eventsOf(id)).toEqual([]);
    expect((await api.post(`/v1/intakes/${id}/send`)).status).toBe(200);
    expect(await auditOf(id)).toEqual(['intake.create', 'intake.send']);
  });

  it('a creation whose audit entry fails creates nothing', async () => {
    await refuseAudit();
    const refused = await api.post('/v1/intakes', {
      project_name: 'Never made',
      client: { email: 'dana@example.com' },
      items: [{ key: 'about', label: 'About you', type: 'text' }],
    });
    expectError(refused, 500, 'internal_error');
    const made = await db()
      .selectFrom('intakes')
      .select('id')
      .where('project_name', '=', 'Never made')
      .execute();
    expect(made).toEqual([]);
  });

  it('an approval, a revision request and a deletion whose audit entry fails change nothing', async () => {
    const id = await draft();
    expect((await api.post(`/v1/intakes/${id}/send`)).status).toBe(200);
    const portal = client(server.url);
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Boats since 1999.' } });
    expect((await portal.post(`/portal/api/${id}/items/about/submit`)).status).toBe(200);
    await refuseAudit();
    expectError(await api.post(`/v1/intakes/${id}/items/about/approve`), 500, 'internal_error');
    expectError(
      await api.post(`/v1/intakes/${id}/revision`, { item_key: 'about', note: 'More, please.' }),
      500,
      'internal_error',
    );
    expectError(await api.delete(`/v1/intakes/${id}`), 500, 'internal_error');
    await allowAudit();
    const intake = await api.get<{ items: { key: string; status: string }[] }>(`/v1/intakes/${id}`);
    expect(intake.status).toBe(200);
    expect(intake.body.items.map((i) => i.status)).toEqual(['submitted']);
  });

  it('an account update whose audit entry fails changes neither the name nor the branding', async () => {
    const before = await api.get<{ name: string }>('/v1/account');
    await refuseAudit();
    const refused = await api.patch('/v1/account', {
      name: 'Renamed Studio',
      branding: { accent_color: '#123456' },
    });
    expectError(refused, 500, 'internal_error');
    await allowAudit();
    const after = await api.get<{ name: string }>('/v1/account');
    expect(after.body.name).toBe(before.body.name);
    const branding = await db()
      .selectFrom('account_branding')
      .select('accent_color')
      .where('account_id', '=', accountId)
      .execute();
    expect(branding.map((b) => b.accent_color)).not.toContain('#123456');
  });

  it('a dashboard send whose audit entry fails is not sent', async () => {
    const id = await draft();
    const owner = await signedInOwner(server, accountId);
    const page = await owner.get(`${server.url}/dashboard/intakes/${id}`);
    const csrf = csrfOf(await page.text());
    await refuseAudit();
    const refused = await owner.postForm(`${server.url}/dashboard/intakes/${id}/send`, { _csrf: csrf });
    expect(refused.status).toBe(500);
    await allowAudit();
    expect((await api.get<{ status: string }>(`/v1/intakes/${id}`)).body.status).toBe('draft');
    const sent = await owner.postForm(`${server.url}/dashboard/intakes/${id}/send`, { _csrf: csrf });
    expect(sent.status).toBe(303);
    const entries = await db()
      .selectFrom('audit_entries')
      .select(['action', 'actor_type'])
      .where('resource_id', '=', id)
      .where('action', '=', 'intake.send')
      .execute();
    expect(entries).toEqual([{ action: 'intake.send', actor_type: 'user' }]);
  });

  it('templates, folders, keys and the test clock: a refused audit entry leaves no change', async () => {
    const keys = async () => (await api.get<{ keys: { id: string; name: string }[] }>('/v1/keys')).body.keys;
    const spare = await api.post<{ id: string }>('/v1/keys', { name: 'spare', scopes: ['intakes:read'] });
    expect(spare.status).toBe(201);
    const account = await db()
      .selectFrom('accounts')
      .select('test_clock_offset_ms')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    const testKey = await api.post<{ key: string }>('/v1/keys', {
      name: 'test admin',
      mode: 'test',
      scopes: ['admin'],
    });
    const testApi = client(server.url, testKey.body.key);
    const countOf = async (table: 'templates' | 'folders') =>
      (await db().selectFrom(table).select('id').where('account_id', '=', accountId).execute()).length;

    await refuseAudit();
    const refused = [
      await api.post('/v1/templates', { name: 'Kit', items: [{ key: 'a', label: 'A', type: 'text' }] }),
      await api.post('/v1/folders', { name: 'Clients' }),
      await api.post('/v1/keys', { name: 'never', scopes: ['intakes:read'] }),
      await api.delete(`/v1/keys/${spare.body.id}`),
      await testApi.post('/v1/test_helpers/advance_clock', { seconds: 3600 }),
    ];
    await allowAudit();
    for (const answer of refused) expectError(answer, 500, 'internal_error');
    expect(await countOf('templates')).toBe(0);
    expect(await countOf('folders')).toBe(0);
    const left = await keys();
    expect(left.map((k) => k.id)).toContain(spare.body.id);
    expect(left.map((k) => k.name)).not.toContain('never');
    const after = await db()
      .selectFrom('accounts')
      .select('test_clock_offset_ms')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(after.test_clock_offset_ms)).toBe(Number(account.test_clock_offset_ms));
  });

  it('a dashboard key revocation whose audit entry fails leaves the key working', async () => {
    const spare = await api.post<{ id: string; key: string }>('/v1/keys', {
      name: 'dashboard spare',
      scopes: ['intakes:read'],
    });
    const owner = await signedInOwner(server, accountId);
    const csrf = csrfOf(await (await owner.get(`${server.url}/dashboard/keys`)).text());
    await refuseAudit();
    const refused = await owner.postForm(`${server.url}/dashboard/keys/${spare.body.id}/revoke`, {
      _csrf: csrf,
    });
    expect(refused.status).toBe(500);
    await allowAudit();
    expect((await client(server.url, spare.body.key).get('/v1/intakes')).status).toBe(200);
  });
});
