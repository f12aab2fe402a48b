import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Json = Record<string, unknown>;

async function connect(baseUrl: string, key: string): Promise<McpClient> {
  const mcp = new McpClient({ name: 'editing-tools-tests', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return mcp;
}

const textOf = (result: CallToolResult) => (result.content[0]?.type === 'text' ? result.content[0].text : '');

describe.each(DATABASES)('agent tools for editing, folders and follow-up on %s', (database) => {
  let server: TestServer;
  let mcp: McpClient;
  let otherMcp: McpClient;

  beforeAll(async () => {
    server = await startTestServer(database);
    mcp = await connect(server.url, (await server.createAccount({ plan: 'solo' })).test_key);
    otherMcp = await connect(server.url, (await server.createAccount({ plan: 'solo' })).test_key);
  });
  afterAll(async () => {
    await mcp.close();
    await otherMcp.close();
    await server.stop();
  });

  async function call(name: string, args: Json, on = mcp): Promise<CallToolResult> {
    return CallToolResultSchema.parse(await on.callTool({ name, arguments: args }));
  }
  async function ok<T = Json>(name: string, args: Json, on = mcp): Promise<T> {
    const result = await call(name, args, on);
    expect(result.isError ?? false, textOf(result)).toBe(false);
    return result.structuredContent as T;
  }
  async function fails(name: string, args: Json, on = mcp): Promise<Json> {
    const result = await call(name, args, on);
    expect(result.isError, textOf(result)).toBe(true);
    return JSON.parse(textOf(result)) as Json;
  }

  it('lists the new tools with input schemas from the routes', async () => {
    const { tools } = await mcp.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'update_intake',
      'update_item',
      'delete_item',
      'list_folders',
      'create_folder',
      'rename_folder',
      'delete_folder',
    ]) {
      expect(names).toContain(name);
    }
    const update = tools.find((t) => t.name === 'update_intake');
    expect(Object.keys(update?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining([
        'intake_id',
        'due_date',
        'chase_schedule',
        'max_reminders',
        'client_brief',
        'folder_id',
      ]),
    );
  });

  it('define_intake returns follow_up; folders, editing and search work through the tools', async () => {
    const folder = await ok<{ id: string; name: string }>('create_folder', { name: 'Acme' });
    expect((await fails('create_folder', { name: 'ACME' })).error).toBe('conflict');

    const defined = await call('define_intake', {
      project_name: 'Acme website',
      client: { email: 'dana@acme.example', name: 'Dana' },
      items: [
        { key: 'about', label: 'About', type: 'longtext', constraints: { max_chars: 100 } },
        { key: 'colours', label: 'Colours', type: 'color_list', required: false },
      ],
      folder_id: folder.id,
      idempotency_key: 'tools-1',
    });
    const created = defined.structuredContent as { intake_id: string; follow_up: Json };
    expect(created.follow_up).toMatchObject({
      recommended: 'schedule',
      schedule: { check_with: 'get_intake_status', every_hours: 24 },
    });
    expect(textOf(defined)).toContain('check get_intake_status every 24 hours');
    const id = created.intake_id;

    const updated = await ok<Json>('update_intake', {
      intake_id: id,
      due_date: '2099-06-01',
      chase_schedule: 'gentle',
    });
    expect(updated).toMatchObject({ due_date: '2099-06-01', chase_schedule: 'gentle', folder_id: folder.id });
    expect(await ok<Json>('update_intake', { intake_id: id, due_date: null })).toMatchObject({
      due_date: null,
    });

    await ok('simulate_client', { intake_id: id, action: 'submit', items: ['about'] });
    const conflict = await fails('update_item', {
      intake_id: id,
      item_key: 'about',
      constraints: { max_chars: 3 },
    });
    expect(conflict.error).toBe('item_answer_would_be_discarded');
    const discarded = await ok<Json>('update_item', {
      intake_id: id,
      item_key: 'about',
      constraints: { max_chars: 3 },
      discard_submitted_value: true,
    });
    expect(discarded).toMatchObject({ key: 'about', status: 'pending', constraints: { max_chars: 3 } });

    expect((await call('delete_item', { intake_id: id, item_key: 'colours' })).isError ?? false).toBe(false);
    const intake = await ok<{ items: { key: string }[] }>('get_intake', { intake_id: id });
    expect(intake.items.map((i) => i.key)).toEqual(['about']);

    const inFolder = await ok<{ intakes: { id: string }[] }>('list_intakes', { folder_id: folder.id });
    expect(inFolder.intakes.map((i) => i.id)).toEqual([id]);
    const searched = await ok<{ intakes: { id: string }[] }>('list_intakes', { q: 'ACME WEB' });
    expect(searched.intakes.map((i) => i.id)).toEqual([id]);

    const folders = await ok<{ folders: { id: string; intake_count: number }[] }>('list_folders', {});
    expect(folders.folders).toEqual([expect.objectContaining({ id: folder.id, intake_count: 1 })]);
    expect(await ok<Json>('rename_folder', { folder_id: folder.id, name: 'Acme Inc' })).toMatchObject({
      name: 'Acme Inc',
    });
    expect((await fails('rename_folder', { folder_id: folder.id, name: 'Theirs' }, otherMcp)).error).toBe(
      'not_found',
    );
    expect((await fails('update_intake', { intake_id: id, project_name: 'x' }, otherMcp)).error).toBe(
      'not_found',
    );
    expect((await call('delete_folder', { folder_id: folder.id })).isError ?? false).toBe(false);
    expect((await ok<Json>('get_intake', { intake_id: id })).folder_id).toBeNull();
  });

  it('a key that lacks intakes:write cannot edit (403 through the tool)', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const admin = await connect(server.url, account.test_key);
    const created = await ok<{ intake_id: string }>(
      'define_intake',
      {
        project_name: 'x',
        client: { email: 'a@example.com' },
        items: [{ key: 'a', label: 'A', type: 'text' }],
      },
      admin,
    );
    const response = await fetch(`${server.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.test_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'reader', scopes: ['intakes:read'] }),
    });
    const readerKey = ((await response.json()) as { key: string }).key;
    const reader = await connect(server.url, readerKey);
    expect(
      (await fails('update_intake', { intake_id: created.intake_id, project_name: 'y' }, reader)).error,
    ).toBe('forbidden');
    expect((await fails('create_folder', { name: 'x' }, reader)).error).toBe('forbidden');
    await reader.close();
    await admin.close();
  });

  it('pages the list by cursor: the summary names the next starting_after, and the pages follow on', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const agent = await connect(server.url, account.test_key);
    const ids: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      const created = await ok<{ intake_id: string }>(
        'define_intake',
        {
          project_name: name,
          client: { email: 'a@example.com' },
          items: [{ key: 'a', label: 'A', type: 'text' }],
        },
        agent,
      );
      ids.unshift(created.intake_id);
    }
    type Page = { total: number; has_more: boolean; intakes: { intake_id: string }[] };
    const first = await call('list_intakes', { limit: 2 }, agent);
    const page = first.structuredContent as Page;
    expect(page).toMatchObject({ total: 3, has_more: true });
    expect(page.intakes.map((i) => i.intake_id)).toEqual(ids.slice(0, 2));
    expect(JSON.stringify(first.content)).toContain(`starting_after=${ids[1]}`);
    const next = await ok<Page>('list_intakes', { limit: 2, starting_after: ids[1] }, agent);
    expect(next).toMatchObject({ total: 3, has_more: false, intakes: [{ intake_id: ids[2] }] });
    expect((await fails('list_intakes', { starting_after: 'in_nothing' }, agent)).error).toBe(
      'invalid_request',
    );
    await agent.close();
  });
});
