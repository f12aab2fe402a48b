import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portabilityProblems, portableSchema } from '../src/modules/mcp/mcp.portable.js';
import { listedTools } from '../src/modules/mcp/mcp.server.js';
import { DATABASES, childEnv } from './helpers/env.js';
import { intakeCommand } from './helpers/processes.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/*
 * Tool schemas an agent host can hand to its model as they are (mcp.portable.ts): every tool's input
 * and output schema, as the MCP SDK's client receives it over each transport, has no portability
 * problem, and is the derived form. The answers still pass the output schemas: the SDK client checks
 * each structured result against the listed schema (a mismatch throws), here with nullable fields,
 * free-form values and structured answers in them.
 */

type Json = Record<string, unknown>;

async function connectHttp(baseUrl: string, key: string): Promise<McpClient> {
  const mcp = new McpClient({ name: 'schema-tests', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return mcp;
}

/** Every problem of every listed schema, named by tool: the empty list is the pass. */
function problemsOf(tools: Tool[]): string[] {
  return tools.flatMap((tool) => [
    ...portabilityProblems(tool.inputSchema).map((problem) => `${tool.name} input ${problem}`),
    ...(tool.outputSchema
      ? portabilityProblems(tool.outputSchema).map((problem) => `${tool.name} output ${problem}`)
      : []),
  ]);
}

/** A successful call's structured content; the SDK client has checked it against the output schema. */
async function ok<T = Json>(mcp: McpClient, name: string, args: Json): Promise<T> {
  const result = CallToolResultSchema.parse(await mcp.callTool({ name, arguments: args }));
  const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false);
  expect(result.structuredContent, name).toBeDefined();
  return result.structuredContent as T;
}

const ITEMS = [
  { key: 'about', label: 'About you', type: 'longtext' },
  { key: 'website', label: 'Website', type: 'url', required: false, help: null },
  {
    key: 'company',
    label: 'Company details',
    type: 'structured',
    schema: {
      type: 'object',
      properties: { name: { type: 'string' }, employees: { type: 'integer', minimum: 1 } },
      required: ['name', 'employees'],
    },
  },
  {
    key: 'channels',
    label: 'Channels',
    type: 'multiselect',
    options: [
      { value: 'web', label: 'Web' },
      { value: 'print', label: 'Print' },
    ],
  },
  { key: 'logo', label: 'Logo', type: 'image', required: false },
];

describe.each(DATABASES)('agent tool schemas on %s', (database) => {
  let server: TestServer;
  let testKey: string;
  let mcp: McpClient;
  let tools: Tool[];

  beforeAll(async () => {
    server = await startTestServer(database);
    testKey = (await server.createAccount({ plan: 'agency' })).test_key;
    mcp = await connectHttp(server.url, testKey);
    // Listing also makes the SDK client check every later structured result against its schema.
    tools = (await mcp.listTools()).tools;
  });
  afterAll(async () => {
    await mcp.close();
    await server.stop();
  });

  it('lists over HTTP schemas with no portability problem, exactly the derived ones', () => {
    expect(problemsOf(tools)).toEqual([]);
    // The same, counted in the listing's text (a tool without arguments has `"properties": {}`).
    const listed = JSON.stringify(tools);
    expect(listed.match(/"type":\[/g) ?? []).toEqual([]);
    expect(listed.match(/"(?!properties")[^"]+":\{\}/g) ?? []).toEqual([]);
    expect(listed.match(/"\$(ref|schema|defs)"|"definitions"/g) ?? []).toEqual([]);
    const derived = new Map(listedTools().map((tool): [string, Tool] => [tool.name, tool]));
    for (const tool of tools) {
      expect(tool.inputSchema, tool.name).toEqual(derived.get(tool.name)?.inputSchema);
      expect(tool.outputSchema, tool.name).toEqual(derived.get(tool.name)?.outputSchema);
      // Derived already: the derivation has nothing left to change.
      expect(portableSchema(tool.inputSchema), tool.name).toEqual(tool.inputSchema);
      if (tool.outputSchema) expect(portableSchema(tool.outputSchema), tool.name).toEqual(tool.outputSchema);
    }
    // Enums stay enums; a nullable field is an anyOf with null.
    const define = JSON.stringify(tools.find((t) => t.name === 'define_intake')?.inputSchema);
    expect(define).toContain('"enum":["image","file","file_list","text"');
    const updateItem = tools.find((t) => t.name === 'update_item')?.inputSchema.properties ?? {};
    expect(updateItem.help).toEqual({ anyOf: [{ type: 'string', maxLength: 2000 }, { type: 'null' }] });
  });

  it('gives answers that pass the listed output schemas: nulls, free-form and structured values', async () => {
    const defined = await ok<{ intake_id: string }>(mcp, 'define_intake', {
      project_name: 'Schemas',
      client: { email: 'dana@example.com', name: null },
      items: ITEMS,
      due_date: null,
    });
    const intake_id = defined.intake_id;
    const intake = await ok<{ items: { key: string; help: string | null; schema: Json | null }[] }>(
      mcp,
      'get_intake',
      { intake_id },
    );
    expect(intake.items.find((i) => i.key === 'website')?.help).toBeNull();
    expect(intake.items.find((i) => i.key === 'company')?.schema).toMatchObject({ type: 'object' });

    await ok(mcp, 'simulate_client', {
      intake_id,
      action: 'submit',
      items: ['about', 'company', 'channels'],
    });
    await ok(mcp, 'get_intake_status', { intake_id });
    const results = await ok<{ items: { key: string; value: unknown; approved_at: string | null }[] }>(
      mcp,
      'get_intake_results',
      { intake_id, include_pending: true },
    );
    const values = new Map(results.items.map((item) => [item.key, item]));
    expect(typeof values.get('about')?.value).toBe('string');
    expect(values.get('company')?.value).toMatchObject({ name: expect.any(String) });
    expect(Array.isArray(values.get('channels')?.value)).toBe(true);
    expect(values.get('about')?.approved_at).toBeNull();

    await ok(mcp, 'update_item', {
      intake_id,
      item_key: 'website',
      help: null,
      example: 'https://example.com',
    });
    await ok(mcp, 'approve_items', { intake_id });
    const approved = await ok<{ items: { approved_at: string | null }[] }>(mcp, 'get_intake_results', {
      intake_id,
    });
    expect(approved.items.every((item) => typeof item.approved_at === 'string')).toBe(true);
    await ok(mcp, 'list_intakes', { limit: 5 });
    await ok(mcp, 'get_test_outbox', { intake_id });

    // The check the SDK client makes is a real one: the same validator refuses an answer that breaks
    // the schema (a timestamp that is a number, a status outside the enum).
    const schema = tools.find((t) => t.name === 'get_intake_results')?.outputSchema;
    if (!schema) throw new Error('get_intake_results has no output schema');
    const validate = new AjvJsonSchemaValidator().getValidator<Json>(schema);
    expect(validate(results).valid).toBe(true);
    const [first, ...rest] = results.items;
    expect(validate({ ...results, items: [{ ...first, approved_at: 12 }, ...rest] }).valid).toBe(false);
    expect(validate({ ...results, status: 'lost' }).valid).toBe(false);
  });
});

describe('agent tool schemas over stdio', () => {
  let server: TestServer;
  let mcp: McpClient;

  beforeAll(async () => {
    // The transport is what differs here; the database does not matter to a listing.
    server = await startTestServer('sqlite');
    const { test_key } = await server.createAccount({ plan: 'agency' });
    const env = childEnv({ INTAKE_API_KEY: test_key, BASE_URL: server.url, LOG_LEVEL: 'silent' });
    mcp = new McpClient({ name: 'schema-tests', version: '1.0.0' });
    await mcp.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: intakeCommand('mcp'),
        env: Object.fromEntries(
          Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        stderr: 'inherit',
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await mcp.close();
    await server.stop();
  });

  it('lists the same derived schemas, the sign-in tools included, with no portability problem', async () => {
    const { tools } = await mcp.listTools();
    expect(problemsOf(tools)).toEqual([]);
    expect(tools.map((t) => t.name)).toEqual([...listedTools().map((t) => t.name), 'login', 'logout']);
    const derived = new Map(listedTools().map((tool): [string, Tool] => [tool.name, tool]));
    for (const tool of tools.filter((t) => derived.has(t.name))) {
      expect(tool.inputSchema, tool.name).toEqual(derived.get(tool.name)?.inputSchema);
      expect(tool.outputSchema, tool.name).toEqual(derived.get(tool.name)?.outputSchema);
    }
    const created = await ok<{ intake_id: string }>(mcp, 'define_intake', {
      project_name: 'Over stdio',
      client: { email: 'sam@example.com' },
      items: ITEMS.slice(0, 2),
      send: false,
    });
    await ok(mcp, 'get_intake', { intake_id: created.intake_id });
  }, 60_000);
});
