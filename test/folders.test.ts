import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface Folder {
  id: string;
  name: string;
  intake_count: number;
}
interface IntakeList {
  total: number;
  intakes: { id: string; projectName: string }[];
}

describe.each(DATABASES)('folders and intake search on %s', (database) => {
  let server: TestServer;
  let live: Client;
  let test: Client;
  let other: Client;
  let reader: Client;
  let anonymous: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    other = client(server.url, (await server.createAccount({ plan: 'agency' })).live_key);
    reader = client(
      server.url,
      (await live.post<{ key: string }>('/v1/keys', { name: 'r', scopes: ['intakes:read'] })).body.key,
    );
    anonymous = client(server.url);
  });
  afterAll(async () => {
    await server.stop();
  });

  const intake = async (
    api: Client,
    project: string,
    clientBody: Record<string, string>,
    folderId?: string,
  ) => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: project,
      client: clientBody,
      items: [{ key: 'a', label: 'A', type: 'text' }],
      ...(folderId ? { folder_id: folderId } : {}),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.intake_id;
  };

  it('secures the folder routes; another account’s folder is 404', async () => {
    const folder = await live.post<Folder>('/v1/folders', { name: 'Secured' });
    await expectSecured(anonymous, undefined, 'GET', '/v1/folders');
    await expectSecured(anonymous, reader, 'POST', '/v1/folders', { name: 'x' });
    await expectSecured(anonymous, reader, 'PATCH', `/v1/folders/${folder.body.id}`, { name: 'y' });
    await expectSecured(anonymous, reader, 'DELETE', `/v1/folders/${folder.body.id}`);
    expectError(await other.patch(`/v1/folders/${folder.body.id}`, { name: 'mine' }), 404, 'not_found');
    expectError(await other.delete(`/v1/folders/${folder.body.id}`), 404, 'not_found');
    expectError(await test.patch(`/v1/folders/${folder.body.id}`, { name: 'test world' }), 404, 'not_found');
    expect((await other.get<{ folders: Folder[] }>('/v1/folders')).body.folders).toEqual([]);
    // Filing into another account's folder is 404 too, at creation and in PATCH.
    const created = await other.post('/v1/intakes', {
      project_name: 'x',
      client: { email: 'a@example.com' },
      items: [{ key: 'a', label: 'A', type: 'text' }],
      folder_id: folder.body.id,
    });
    expectError(created, 404, 'not_found');
    const own = await intake(other, 'Theirs', { email: 'b@example.com' });
    expectError(await other.patch(`/v1/intakes/${own}`, { folder_id: folder.body.id }), 404, 'not_found');
  });

  it('creates, lists, renames and deletes folders; names are unique case-insensitively', async () => {
    const created = await live.post<Folder>('/v1/folders', { name: 'Acme Corp' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Acme Corp', intake_count: 0 });
    expect(created.body.id).toMatch(/^fld_[0-9A-Za-z]{22}$/);
    expectError(await live.post('/v1/folders', { name: 'acme corp' }), 409, 'conflict');
    expectError(await live.post('/v1/folders', { name: '  ' }), 400, 'invalid_request');

    const id = await intake(live, 'Logo', { email: 'a@example.com' }, created.body.id);
    const listed = await live.get<{ folders: Folder[] }>('/v1/folders');
    expect(listed.body.folders.find((f) => f.id === created.body.id)).toMatchObject({ intake_count: 1 });

    const renamed = await live.patch<Folder>(`/v1/folders/${created.body.id}`, { name: 'Acme Inc' });
    expect(renamed.body).toMatchObject({ name: 'Acme Inc', intake_count: 1 });
    await live.post('/v1/folders', { name: 'Other' });
    expectError(await live.patch(`/v1/folders/${created.body.id}`, { name: 'OTHER' }), 409, 'conflict');

    expect((await live.delete(`/v1/folders/${created.body.id}`)).status).toBe(204);
    expectError(await live.delete(`/v1/folders/${created.body.id}`), 404, 'not_found');
    const unfiled = await live.get<{ folder_id: string | null }>(`/v1/intakes/${id}`);
    expect(unfiled.body.folder_id).toBeNull();
  });

  it('lists one folder’s intakes and searches project, client name and email case-insensitively', async () => {
    const folder = (await live.post<Folder>('/v1/folders', { name: 'Search' })).body;
    const a = await intake(
      live,
      'Bakery Website',
      { email: 'owner@crumbs.example', name: 'Zoë Baker' },
      folder.id,
    );
    const b = await intake(live, 'Logo refresh', { email: 'MAX@Example.com', name: 'Max Mustermann' });
    const c = await intake(live, '100%_done', { email: 'c@example.com' });
    await live.patch(`/v1/intakes/${b}`, { folder_id: folder.id });

    const inFolder = await live.get<IntakeList>(`/v1/intakes?folder_id=${folder.id}`);
    expect(new Set(inFolder.body.intakes.map((i) => i.id))).toEqual(new Set([a, b]));
    expect(inFolder.body.total).toBe(2);

    const search = async (q: string) =>
      (await live.get<IntakeList>(`/v1/intakes?q=${encodeURIComponent(q)}`)).body.intakes.map((i) => i.id);
    expect(await search('bakery')).toEqual([a]);
    expect(await search('BAKER')).toEqual([a]);
    expect(await search('mustermann')).toEqual([b]);
    expect(await search('max@example')).toEqual([b]);
    expect(await search('crumbs')).toEqual([a]);
    // LIKE wildcards in q are literal characters.
    expect(await search('%_')).toEqual([c]);
    expect(await search('no such thing')).toEqual([]);
    const both = await live.get<IntakeList>(`/v1/intakes?folder_id=${folder.id}&q=logo`);
    expect(both.body.intakes.map((i) => i.id)).toEqual([b]);
    expect((await other.get<IntakeList>('/v1/intakes?q=bakery')).body.total).toBe(0);

    await live.patch(`/v1/intakes/${a}`, { folder_id: null });
    expect(
      (await live.get<IntakeList>(`/v1/intakes?folder_id=${folder.id}`)).body.intakes.map((i) => i.id),
    ).toEqual([b]);
  });
});
