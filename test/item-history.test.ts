import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface HistoryEntry {
  action: string;
  at: string;
  actor: { type: string; id: string | null };
  note: string | null;
}
interface Item {
  key: string;
  status: string;
  review_note: string | null;
  revision_note: string | null;
  history: HistoryEntry[];
}

const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'tagline', label: 'Tagline', type: 'text' },
];

describe.each(DATABASES)('review notes and item history on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function setup() {
    const created = await server.createAccount({ plan: 'agency' });
    const test = client(server.url, created.test_key);
    const answer = await test.post<Body>('/v1/intakes', {
      project_name: 'Website copy',
      client: { email: `c-${Math.random().toString(36).slice(2)}@example.test`, language: 'de' },
      items: ITEMS,
    });
    expect(answer.status, answer.text).toBe(201);
    return { test, key: created.test_key, keyId: await keyIdOf(test), id: answer.body.intake_id as string };
  }
  async function keyIdOf(api: Client): Promise<string> {
    const keys = await api.get<{ keys: { id: string; mode: string }[] }>('/v1/keys');
    return keys.body.keys.find((k) => k.mode === 'test')?.id ?? '';
  }
  const items = async (api: Client, id: string) =>
    (await api.get<{ items: Item[] }>(`/v1/intakes/${id}`)).body.items;
  const portalItem = async (id: string, key: string) => {
    const view = await client(server.url).get<{ items: Item[] }>(`/portal/api/${id}`);
    return view.body.items.find((i) => i.key === key);
  };

  it('records submissions, revisions and approvals with actors and notes; the client sees the notes', async () => {
    const { test, id, keyId } = await setup();
    const anonymous = client(server.url);
    const simulated = await test.post(`/v1/test_helpers/intakes/${id}/simulate`, {
      action: 'submit',
      items: ['about'],
    });
    expect(simulated.status).toBe(200);
    const revision = await test.post(`/v1/intakes/${id}/revision`, {
      item_key: 'about',
      note: 'Please mention the founding year.',
    });
    expect(revision.status, revision.text).toBe(200);
    expect(await portalItem(id, 'about')).toMatchObject({
      status: 'needs_revision',
      review_note: 'Please mention the founding year.',
    });
    const page = await anonymous.get(`/portal/${id}`);
    expect(page.text).toContain('Please mention the founding year.');

    // The client answers again through the portal: the old note no longer applies.
    expect(
      (await anonymous.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Founded in 1999.' } }))
        .status,
    ).toBe(200);
    expect((await anonymous.post(`/portal/api/${id}/items/about/submit`)).status).toBe(200);
    expect((await portalItem(id, 'about'))?.review_note).toBeNull();

    const approved = await test.post(`/v1/intakes/${id}/items/about/approve`, {
      note: 'Perfect, thank you!',
    });
    expect(approved.status, approved.text).toBe(200);
    expect(await portalItem(id, 'about')).toMatchObject({
      status: 'approved',
      review_note: 'Perfect, thank you!',
    });
    const approvedPage = await anonymous.get(`/portal/${id}`);
    expect(approvedPage.text).toContain('Perfect, thank you!');
    expect(approvedPage.text).toContain('Hinweis der prüfenden Person:');

    const about = (await items(test, id)).find((i) => i.key === 'about');
    expect(about?.history.map((h) => [h.action, h.actor.type, h.note])).toEqual([
      ['submitted', 'client', null],
      ['revision_requested', 'api_key', 'Please mention the founding year.'],
      ['submitted', 'client', null],
      ['approved', 'api_key', 'Perfect, thank you!'],
    ]);
    expect(about?.history[1]?.actor.id).toBe(keyId);
    const times = about?.history.map((h) => Date.parse(h.at)) ?? [];
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect((await items(test, id)).find((i) => i.key === 'tagline')?.history).toEqual([]);

    expectError(
      await test.post(`/v1/intakes/${id}/items/tagline/approve`, { note: 'x', extra: 1 }),
      400,
      'invalid_request',
    );
  });

  it('auto-approval after 72 hours is the system; approve_item (agent tool) carries the note', async () => {
    const { test, id, key } = await setup();
    await test.post(`/v1/test_helpers/intakes/${id}/simulate`, { action: 'submit' });
    const mcp = new McpClient({ name: 'history-tests', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const result = CallToolResultSchema.parse(
        await mcp.callTool({
          name: 'approve_item',
          arguments: { intake_id: id, item_key: 'tagline', note: 'Great tagline.' },
        }),
      );
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ item_key: 'tagline', status: 'approved' });
    } finally {
      await mcp.close();
    }
    expect((await test.post('/v1/test_helpers/advance_clock', { seconds: 73 * 3600 })).status).toBe(200);
    const all = await items(test, id);
    expect(all.find((i) => i.key === 'tagline')?.history.at(-1)).toMatchObject({
      action: 'approved',
      actor: { type: 'api_key' },
      note: 'Great tagline.',
    });
    expect(all.find((i) => i.key === 'about')?.history.map((h) => [h.action, h.actor.type])).toEqual([
      ['submitted', 'client'],
      ['approved', 'system'],
    ]);
    expect(all.find((i) => i.key === 'about')?.review_note).toBeNull();
  });

  it('an adopted agent proposal has its approval in the item history, by the system', async () => {
    const created = await server.createAccount({ plan: 'agency' });
    const test = client(server.url, created.test_key);
    const answer = await test.post<Body>('/v1/intakes', {
      project_name: 'Launch',
      client: { email: 'launch@example.test' },
      items: [
        { key: 'about', label: 'About you', type: 'text' },
        {
          key: 'launch_plan',
          label: 'Launch in one go or in phases?',
          type: 'select',
          assignee: 'owner',
          options: [
            { value: 'one', label: 'One go' },
            { value: 'phases', label: 'Phases' },
          ],
          proposed: { value: 'phases', rationale: 'Forty pages: phases lower the risk.' },
        },
      ],
    });
    expect(answer.status, answer.text).toBe(201);
    const id = answer.body.intake_id as string;
    const portal = client(server.url);
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Hi' } });
    expect((await portal.post(`/portal/api/${id}/items/about/submit`)).status).toBe(200);
    expect((await test.post(`/v1/intakes/${id}/items/about/approve`)).status).toBe(200);

    const decision = (await items(test, id)).find((i) => i.key === 'launch_plan');
    expect(decision?.status).toBe('approved');
    expect(decision?.history.map((h) => [h.action, h.actor.type, h.actor.id, h.note])).toEqual([
      ['approved', 'system', null, null],
    ]);
  });
});
