import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listedTools } from '../src/modules/mcp/mcp.server.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface ResultItem {
  key: string;
  value: unknown;
  revealed_at?: string | null;
  withheld?: string;
}

describe.each(DATABASES)('secret items in results on %s', (database) => {
  let server: TestServer;
  let owner: Client;
  let reader: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    owner = client(server.url, account.live_key);
    portal = client(server.url);
    const readerKey = await owner.post<{ key: string }>('/v1/keys', {
      name: 'reader',
      scopes: ['intakes:read', 'intakes:write'],
    });
    reader = client(server.url, readerKey.body.key);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function submittedSecret(value: string): Promise<string> {
    const created = await owner.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Hosting move',
      client: { email: 'dana@example.com' },
      items: [{ key: 'password', label: 'Hosting password', type: 'secret' }],
    });
    expect(created.status).toBe(201);
    const id = created.body.intake_id;
    await submit(id, value);
    return id;
  }

  async function submit(id: string, value: string): Promise<void> {
    const saved = await portal.call('PUT', `/portal/api/${id}/items/password`, { body: { value } });
    expect(saved.status).toBe(200);
    expect((await portal.post(`/portal/api/${id}/items/password/submit`)).status).toBe(200);
  }

  async function secretResult(as: Client, id: string): Promise<ResultItem | undefined> {
    const results = await as.get<{ items: ResultItem[] }>(`/v1/intakes/${id}/results?include_pending=true`);
    expect(results.status).toBe(200);
    return results.body.items.find((i) => i.key === 'password');
  }

  it('names why a secret is withheld: the missing scope, or an earlier reveal', async () => {
    const id = await submittedSecret('hunter2');
    expect(await secretResult(reader, id)).toMatchObject({
      value: null,
      revealed_at: null,
      withheld: 'secrets:read',
    });
    const shown = await secretResult(owner, id);
    expect(shown?.value).toBe('hunter2');
    expect(shown?.withheld).toBeUndefined();
    expect(await secretResult(owner, id)).toMatchObject({
      value: null,
      revealed_at: shown?.revealed_at,
      withheld: 'revealed',
    });
    expect((await secretResult(reader, id))?.withheld).toBe('secrets:read');
  });

  it('reveals a secret asked for again once more after the client resubmits', async () => {
    const id = await submittedSecret('first-password');
    expect((await secretResult(owner, id))?.value).toBe('first-password');
    const revision = await owner.post(`/v1/intakes/${id}/revision`, {
      item_key: 'password',
      note: 'That one does not work.',
    });
    expect(revision.status).toBe(200);
    await submit(id, 'second-password');

    const again = await secretResult(owner, id);
    expect(again).toMatchObject({ value: 'second-password', revealed_at: expect.any(String) });
    expect(again?.withheld).toBeUndefined();
    expect((await secretResult(owner, id))?.withheld).toBe('revealed');
    expectError(await owner.get(`/v1/intakes/${id}/items/password/secret`), 410, 'gone');
  });

  it("reads a secret resent with the page's one send once through the direct read too", async () => {
    const id = await submittedSecret('first-password');
    expect((await owner.get(`/v1/intakes/${id}/items/password/secret`)).body.value).toBe('first-password');
    await owner.post(`/v1/intakes/${id}/revision`, { item_key: 'password', note: 'Wrong one.' });
    // This time through the page's one send (every saved, unsent answer).
    expect(
      (await portal.call('PUT', `/portal/api/${id}/items/password`, { body: { value: 'second-password' } }))
        .status,
    ).toBe(200);
    const sent = await portal.post<{ submitted: string[] }>(`/portal/api/${id}/submit`);
    expect(sent.body.submitted).toEqual(['password']);
    const direct = await owner.get<{ value: string }>(`/v1/intakes/${id}/items/password/secret`);
    expect(direct.status).toBe(200);
    expect(direct.body.value).toBe('second-password');
    expectError(await owner.get(`/v1/intakes/${id}/items/password/secret`), 410, 'gone');
  });

  it('documents withheld in the OpenAPI document and the agent tool output schema', async () => {
    const openapi = await client(server.url).get('/v1/openapi.json');
    const schemas = (openapi.body.components as { schemas: Record<string, unknown> }).schemas;
    expect(JSON.stringify(schemas.Results)).toContain('"withheld"');
    const tool = listedTools().find((t) => t.name === 'get_intake_results');
    expect(JSON.stringify(tool?.outputSchema)).toContain('"withheld"');
  });
});
