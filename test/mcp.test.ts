import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileJsonSchema } from '../src/lib/json-schema.js';
import { portableSchema } from '../src/modules/mcp/mcp.portable.js';
import { TOOLS } from '../src/modules/mcp/mcp.tools.js';
import { DATABASES, childEnv } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { answer, startReceiver } from './helpers/receivers.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { hiddenField, signedInOwner } from './helpers/signed-in.js';
import { intakeCommand } from './helpers/processes.js';

type Json = Record<string, unknown>;
interface ErrorObject {
  error: string;
  message: string;
  request_id?: string;
}

const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext', constraints: { max_chars: 500 } },
  { key: 'website', label: 'Website', type: 'url', required: false },
];

/** The SDK's own client over Streamable HTTP, acting with `key`. */
async function connectHttp(baseUrl: string, key: string): Promise<McpClient> {
  const mcp = new McpClient({ name: 'intake-tests', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return mcp;
}

/** The SDK's own client spawning `cli mcp` over stdio, with INTAKE_API_KEY and BASE_URL. */
async function connectStdio(baseUrl: string, key: string): Promise<McpClient> {
  const mcp = new McpClient({ name: 'intake-tests', version: '1.0.0' });
  const env = childEnv({ INTAKE_API_KEY: key, BASE_URL: baseUrl, LOG_LEVEL: 'silent' });
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
  return mcp;
}

const TRANSPORTS = { http: connectHttp, stdio: connectStdio } as const;

/** The sign-in tools of the stdio server, which acts with a key of its own (over HTTP, the request's). */
const STDIO_ONLY = ['login', 'logout'];
const ALLOWED_ORIGIN = 'https://agent-host.example';

async function call(mcp: McpClient, name: string, args: Json = {}): Promise<CallToolResult> {
  return CallToolResultSchema.parse(await mcp.callTool({ name, arguments: args }));
}

function textOf(result: CallToolResult, index = 0): string {
  const block = result.content[index];
  return block?.type === 'text' ? block.text : '';
}

/** A successful call: its structured content, which is the REST answer, also given as JSON text. */
function ok<T = Json>(result: CallToolResult): T {
  expect(result.isError ?? false, textOf(result)).toBe(false);
  expect(result.structuredContent).toBeDefined();
  expect(JSON.parse(textOf(result, 1))).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** A failed call: the REST error object, as JSON text. */
function failure(result: CallToolResult): ErrorObject {
  expect(result.isError, textOf(result)).toBe(true);
  return JSON.parse(textOf(result)) as ErrorObject;
}

// ---- JSON Schema comparison: the tool schemas against the routes' own, as OpenAPI publishes them ----

interface OpenApiParameter {
  in: string;
  name: string;
  schema: Json;
  description?: string;
}
interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { content: { 'application/json': { schema: Json } } };
  responses: Record<string, { content?: { 'application/json': { schema: Json } } }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, Json> };
}

/** Inlines every $ref and drops what differs only by dialect (draft-07 here, 2020-12 in OpenAPI). */
function normalized(schema: unknown, definitions: Record<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((entry) => normalized(entry, definitions));
  if (typeof schema !== 'object' || schema === null) return schema;
  const record = schema as Json;
  if (typeof record.$ref === 'string') {
    const name = record.$ref.split('/').pop() ?? '';
    return normalized(definitions[name], definitions);
  }
  // A format (date-time, email…) makes zod's equivalent pattern redundant; the tools leave it out.
  const dropped = [
    '$schema',
    '$id',
    'definitions',
    '$defs',
    'examples',
    ...(record.format ? ['pattern'] : []),
  ];
  return Object.fromEntries(
    Object.entries(record)
      .filter(([key]) => !dropped.includes(key))
      .map(([key, value]) => [key, normalized(value, definitions)]),
  );
}

const ANNOTATIONS = new Set(['description', 'title', 'default']);

/**
 * A field whose schema says nothing about its value (a transform's output) is any JSON: an answer may
 * leave it out. The tools' output schemas say so; OpenAPI's still list such fields as required.
 */
function transformsOptional(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(transformsOptional);
  if (typeof schema !== 'object' || schema === null) return schema;
  const record = Object.fromEntries(
    Object.entries(schema as Json).map(([key, value]) => [key, transformsOptional(value)]),
  );
  if (Array.isArray(record.required) && typeof record.properties === 'object' && record.properties) {
    const properties = record.properties as Record<string, Json>;
    const required = (record.required as string[]).filter((key) =>
      Object.keys(properties[key] ?? {}).some((keyword) => !ANNOTATIONS.has(keyword)),
    );
    if (required.length > 0) record.required = required;
    else delete record.required;
  }
  return record;
}

/**
 * A route's schema as a tool lists it: the same derivation into the portable subset (mcp.portable.ts),
 * which changes no accepted value, so a field that differs between route and tool still differs after.
 */
function asTool(schema: unknown): Json {
  return portableSchema((schema ?? {}) as Json);
}

/** The object schema of a body that may also be absent (anyOf [object, null]). */
function objectOf(schema: unknown): Json {
  const record = schema as Json;
  if (Array.isArray(record.anyOf)) {
    const object = (record.anyOf as Json[]).find((member) => member.type === 'object');
    if (object) return object;
  }
  return record;
}

describe.each(DATABASES)('agent tools (MCP) on %s', (database) => {
  let server: TestServer;
  let rest: Client;
  let testKey: string;
  let readOnlyKey: string;
  let accountId: string;

  beforeAll(async () => {
    server = await startTestServer(database, { MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    testKey = account.test_key;
    rest = client(server.url, testKey);
    const reader = await rest.post<{ key: string }>('/v1/keys', {
      name: 'read only agent',
      mode: 'test',
      scopes: ['intakes:read'],
    });
    expect(reader.status, reader.text).toBe(201);
    readOnlyKey = reader.body.key;
  });
  afterAll(async () => server.stop());

  it('answers /mcp without a valid key with 401 like REST, and GET or DELETE with 405', async () => {
    const anonymous = client(server.url);
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    expectError(await anonymous.post('/mcp', initialize, { headers }), 401, 'unauthorized');
    for (const bad of ['Bearer not-a-key', `Bearer svc_test_${'A'.repeat(43)}`]) {
      expectError(
        await anonymous.post('/mcp', initialize, { headers: { ...headers, authorization: bad } }),
        401,
        'unauthorized',
      );
    }
    await expect(connectHttp(server.url, `svc_test_${'B'.repeat(43)}`)).rejects.toThrow(/unauthorized/);
    expectError(
      await rest.get('/mcp', { headers: { accept: 'text/event-stream' } }),
      405,
      'method_not_allowed',
    );
    expectError(await rest.delete('/mcp'), 405, 'method_not_allowed');
  });

  it('lists every tool, each schema valid JSON Schema matching its REST route', async () => {
    const mcp = await connectHttp(server.url, testKey);
    const { tools } = await mcp.listTools();
    await mcp.close();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
    for (const name of ['define_intake', 'get_intake_status', 'get_intake_results', 'request_revision']) {
      expect(tools.map((t) => t.name)).toContain(name);
    }
    expect(tools.map((t) => t.name)).toContain('send_chase');

    const openapi = (await rest.get('/v1/openapi.json')).body as unknown as OpenApiDocument;
    const components = openapi.components.schemas;
    const byName = new Map(tools.map((t): [string, Tool] => [t.name, t]));
    for (const spec of TOOLS) {
      const tool = byName.get(spec.name);
      if (!tool) throw new Error(`${spec.name} is not listed`);
      const where = `${spec.name} (${spec.method} ${spec.path})`;
      expect(tool.description?.length, where).toBeGreaterThan(60);
      expect(compileJsonSchema(tool.inputSchema), where).toBeUndefined();
      if (tool.outputSchema) expect(compileJsonSchema(tool.outputSchema), where).toBeUndefined();
      // Self-contained: clients that do not follow references read every schema whole.
      expect(JSON.stringify(tool.inputSchema), where).not.toContain('"$ref"');
      expect(JSON.stringify(tool.outputSchema ?? {}), where).not.toContain('"$ref"');

      // A tool over a few endpoints of one resource (manage_recipients): each call is one of them.
      if (spec.choose) {
        const input = tool.inputSchema as { properties?: Record<string, { enum?: string[] }> };
        const routes = Object.entries(spec.choose.routes);
        expect(input.properties?.[spec.choose.argument]?.enum, where).toEqual(routes.map(([name]) => name));
        for (const [name, route] of routes) {
          const template = route.path.replace(/:[a-z_]+/g, '{}');
          const restPath = Object.keys(openapi.paths).find((p) => p.replace(/\{[^}]+\}/g, '{}') === template);
          const operation = restPath ? openapi.paths[restPath]?.[route.method.toLowerCase()] : undefined;
          expect(operation, `${where}: ${name} → ${route.method} ${route.path}`).toBeDefined();
        }
        continue;
      }

      // The tool's one endpoint exists, with this method.
      const template = spec.path.replace(/:[a-z_]+/g, '{}');
      const restPath = Object.keys(openapi.paths).find((p) => p.replace(/\{[^}]+\}/g, '{}') === template);
      const operation = restPath ? openapi.paths[restPath]?.[spec.method.toLowerCase()] : undefined;
      if (!restPath || !operation) throw new Error(`${where}: no such REST endpoint in the OpenAPI document`);

      // Expected arguments: path parameters under the tool's names, then query, headers, body.
      const expected: Record<string, { schema: unknown; required: boolean; kind: string }> = {};
      const toolParams = [...spec.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1] ?? '');
      const restParams = [...restPath.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
      const parameters = operation.parameters ?? [];
      toolParams.forEach((toolName, i) => {
        const parameter = parameters.find((p) => p.in === 'path' && p.name === restParams[i]);
        expected[toolName] = { schema: parameter?.schema, required: true, kind: 'path' };
      });
      for (const parameter of parameters.filter((p) => p.in === 'query')) {
        expected[parameter.name] = { schema: parameter, required: false, kind: 'query' };
      }
      for (const [argument, header] of Object.entries(spec.headers ?? {})) {
        const parameter = parameters.find((p) => p.in === 'header' && p.name === header.toLowerCase());
        expected[argument] = { schema: parameter?.schema, required: false, kind: 'header' };
      }
      const bodySchema = operation.requestBody?.content['application/json'].schema;
      if (bodySchema) {
        const body = objectOf(normalized(bodySchema, components));
        const required = (body.required ?? []) as string[];
        for (const [name, schema] of Object.entries((body.properties ?? {}) as Json)) {
          expected[name] = { schema: asTool(schema), required: required.includes(name), kind: 'body' };
        }
      }

      const input = normalized(tool.inputSchema, (tool.inputSchema.definitions ?? {}) as Json) as Json;
      const properties = (input.properties ?? {}) as Record<string, Json>;
      expect(Object.keys(properties).sort(), where).toEqual(Object.keys(expected).sort());
      expect(((input.required ?? []) as string[]).sort(), where).toEqual(
        Object.keys(expected)
          .filter((name) => expected[name]?.required)
          .sort(),
      );
      for (const [name, want] of Object.entries(expected)) {
        const got = properties[name] ?? {};
        const { description: _ignored, ...gotShape } = got;
        if (want.kind === 'body') {
          expect(got, `${where}: ${name}`).toEqual(want.schema);
        } else if (want.kind === 'query') {
          // Query strings carry flags as "true"/"false": the tool takes JSON booleans for them.
          const parameter = want.schema as OpenApiParameter;
          if (parameter.schema.enum) expect(got.type, `${where}: ${name}`).toBe('boolean');
          else
            expect(gotShape, `${where}: ${name}`).toEqual(asTool(normalized(parameter.schema, components)));
          expect(got.description, `${where}: ${name}`).toBe(parameter.description);
        } else {
          // Path parameters and headers keep the route's constraints; their description is the tool's own.
          const { description: _d, ...restShape } = asTool(normalized(want.schema, components));
          expect(gotShape, `${where}: ${name}`).toEqual(restShape);
          expect(got.description, `${where}: ${name}`).toEqual(expect.any(String));
        }
      }

      // The output schema is the route's success response schema.
      const success = operation.responses['200'] ?? operation.responses['201'];
      const responseSchema = success?.content?.['application/json'].schema;
      if (spec.method === 'DELETE') {
        expect(tool.outputSchema, where).toBeUndefined();
      } else {
        if (!responseSchema || !tool.outputSchema) throw new Error(`${where}: no response schema`);
        expect(normalized(tool.outputSchema, (tool.outputSchema.definitions ?? {}) as Json), where).toEqual(
          asTool(transformsOptional(normalized(responseSchema, components))),
        );
      }
    }
  });

  describe.each(Object.keys(TRANSPORTS) as (keyof typeof TRANSPORTS)[])('over %s', (transport) => {
    let mcp: McpClient;
    let readOnly: McpClient;
    beforeAll(async () => {
      mcp = await TRANSPORTS[transport](server.url, testKey);
      readOnly = await TRANSPORTS[transport](server.url, readOnlyKey);
    });
    afterAll(async () => {
      await mcp.close();
      await readOnly.close();
    });

    it('lists the same tools as the other transport', async () => {
      const { tools } = await mcp.listTools();
      expect(tools.map((t) => t.name)).toEqual([
        ...TOOLS.map((t) => t.name),
        ...(transport === 'stdio' ? STDIO_ONLY : []),
      ]);
      const instructions = mcp.getInstructions() ?? '';
      expect(instructions).toContain('define_intake');
    });

    it('runs an intake story with a test key: define, simulated submit, status, results, revision, chase', async () => {
      const definedResult = await call(mcp, 'define_intake', {
        project_name: `Story over ${transport}`,
        client: { email: 'dana@example.com', name: 'Dana' },
        items: ITEMS,
        idempotency_key: randomUUID(),
      });
      const defined = ok<{ intake_id: string; status: string; portal_url: string }>(definedResult);
      expect(defined.status).toBe('sent');
      expect(defined.intake_id).toMatch(/^in_/);
      expect(textOf(definedResult)).toContain(defined.intake_id);
      expect(textOf(definedResult)).toContain('Test mode: no email reaches the client');
      const intake_id = defined.intake_id;
      // A test key never emails the client: the invitation is captured in the test outbox.
      await vi.waitFor(
        async () => {
          const outbox = await rest.get<{ messages: { to: string; status: string }[] }>(
            `/v1/test_helpers/outbox?intake_id=${intake_id}`,
          );
          expect(outbox.body.messages).toContainEqual(
            expect.objectContaining({ to: 'dana@example.com', status: 'captured' }),
          );
        },
        { timeout: 10_000, interval: 200 },
      );

      const simulated = ok<{ items: { key: string; status: string }[] }>(
        await call(mcp, 'simulate_client', { intake_id, action: 'submit' }),
      );
      expect(simulated.items.map((i) => i.status)).toEqual(['submitted', 'submitted']);

      const statusResult = await call(mcp, 'get_intake_status', { intake_id });
      const status = ok<{ status: string; progress: Json }>(statusResult);
      expect(status.status).toBe('in_progress');
      expect(status.progress).toMatchObject({ submitted: 2, total: 2, outstanding: 0, percent: 100 });
      expect(textOf(statusResult)).toContain('2 of 2 items submitted (100%)');

      const none = ok<{ items: unknown[] }>(await call(mcp, 'get_intake_results', { intake_id }));
      expect(none.items).toEqual([]);
      const results = ok<{ items: { key: string; status: string; value: unknown }[] }>(
        await call(mcp, 'get_intake_results', { intake_id, include_pending: true }),
      );
      expect(results.items.map((i) => [i.key, i.status])).toEqual([
        ['about', 'submitted'],
        ['website', 'submitted'],
      ]);
      expect(typeof results.items[0]?.value).toBe('string');

      const revision = ok<Json>(
        await call(mcp, 'request_revision', {
          intake_id,
          item_key: 'about',
          note: 'Please add a sentence about your team.',
        }),
      );
      expect(revision).toMatchObject({ intake_id, item_key: 'about', status: 'needs_revision' });
      expect(typeof revision.client_notified).toBe('boolean');

      const approved = ok<Json>(await call(mcp, 'approve_item', { intake_id, item_key: 'website' }));
      expect(approved).toEqual({ intake_id, item_key: 'website', status: 'approved' });
      const fresh = ok<{ items: { key: string }[] }>(
        await call(mcp, 'get_intake_results', { intake_id, only_new: true }),
      );
      expect(fresh.items.map((i) => i.key)).toEqual(['website']);

      const chase = await call(mcp, 'send_chase', { intake_id, channel: 'email' });
      const chased = ok<{ chase_id: string; channel: string; status: string }>(chase);
      expect(chased.channel).toBe('email');
      expect(chased.chase_id).toMatch(/^ch_/);
      expect(textOf(chase)).toContain('Test mode');

      const after = ok<{ items: { key: string; status: string }[]; chases: { chase_id: string }[] }>(
        await call(mcp, 'get_intake_status', { intake_id }),
      );
      expect(after.items.find((i) => i.key === 'about')?.status).toBe('needs_revision');
      expect(after.chases.map((c) => c.chase_id)).toContain(chased.chase_id);
    });

    it('returns REST errors as tool errors carrying code, message and request_id', async () => {
      const forbidden = failure(
        await call(readOnly, 'define_intake', {
          project_name: 'Not allowed',
          client: { email: 'x@example.com' },
          items: ITEMS,
        }),
      );
      expect(forbidden.error).toBe('forbidden');
      expect(forbidden.message).toContain('intakes:write');
      expect(forbidden.request_id).toMatch(/^req_/);
      // The same key may read.
      ok(await call(readOnly, 'list_intakes', { limit: 1 }));

      const invalid = failure(
        await call(mcp, 'define_intake', {
          project_name: 'Bad email',
          client: { email: 'not-an-email' },
          items: ITEMS,
        }),
      );
      expect(invalid.error).toBe('invalid_request');
      expect(invalid.message).toContain('body.client.email');
      expect(invalid.request_id).toMatch(/^req_/);

      const typo = failure(
        await call(mcp, 'define_intake', {
          project_name: 'Typo',
          client: { email: 'x@example.com' },
          items: [
            { key: 'docs', label: 'Docs', type: 'file_list', constraints: { min_count: 5, max_count: 2 } },
          ],
        }),
      );
      expect(typo.error).toBe('unprocessable');
      expect(typo.request_id).toMatch(/^req_/);

      const missing = failure(await call(mcp, 'get_intake', { intake_id: 'in_doesnotexist000000000000' }));
      expect(missing.error).toBe('not_found');
      expect(missing.request_id).toMatch(/^req_/);

      const unknownArgument = failure(await call(mcp, 'get_intake', { intake_id: 'in_x', verbose: true }));
      expect(unknownArgument.error).toBe('invalid_request');
      expect(unknownArgument.message).toContain('verbose');
      const noId = failure(await call(mcp, 'get_intake_status', {}));
      expect(noId).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('intake_id') });
    });

    it('creates one intake for two define_intake calls with the same idempotency_key', async () => {
      const args = {
        project_name: `Idempotent over ${transport}`,
        client: { email: 'retry@example.com' },
        items: ITEMS,
        idempotency_key: randomUUID(),
      };
      const first = ok<{ intake_id: string }>(await call(mcp, 'define_intake', args));
      const againResult = await call(mcp, 'define_intake', args);
      const again = ok<{ intake_id: string }>(againResult);
      expect(again.intake_id).toBe(first.intake_id);
      expect(textOf(againResult)).toContain('already existed');
      const listed = await rest.get<{ intakes: { projectName: string }[] }>(
        '/v1/intakes?client_email=retry@example.com&limit=100',
      );
      expect(listed.body.intakes.filter((i) => i.projectName === args.project_name)).toHaveLength(1);

      const conflict = failure(await call(mcp, 'define_intake', { ...args, project_name: 'Another body' }));
      expect(conflict.error).toBe('conflict');
    });

    it('annotates every tool for what it does: read-only changes nothing, whatever drops data is destructive', async () => {
      const { tools } = await mcp.listTools();
      const byName = new Map(tools.map((t): [string, Tool] => [t.name, t]));
      for (const tool of tools) {
        const hints = tool.annotations ?? {};
        for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
          expect(typeof hints[hint], `${tool.name}.${hint}`).toBe('boolean');
        }
        if (hints.readOnlyHint) expect(hints.destructiveHint, tool.name).toBe(false);
      }
      for (const spec of TOOLS) {
        const hints = byName.get(spec.name)?.annotations ?? {};
        const routes = spec.choose ? Object.values(spec.choose.routes) : [{ method: spec.method }];
        // A read-only tool only reads; a PATCH replaces values and a DELETE removes: both drop data.
        if (hints.readOnlyHint)
          expect(
            routes.every((r) => r.method === 'GET'),
            spec.name,
          ).toBe(true);
        if (routes.some((r) => r.method === 'DELETE' || r.method === 'PATCH')) {
          expect(hints.destructiveHint, spec.name).toBe(true);
        }
      }
      // Results reveal a secret once, move the only_new cursor and start the on_delivery purge.
      expect(byName.get('get_intake_results')?.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
      });
      for (const name of ['update_item', 'manage_recipients', 'manage_webhook', 'delete_intake']) {
        expect(byName.get(name)?.annotations?.destructiveHint, name).toBe(true);
      }
      for (const name of ['get_intake_status', 'list_intakes', 'get_test_outbox']) {
        expect(byName.get(name)?.annotations?.readOnlyHint, name).toBe(true);
      }
      expect(byName.get('define_intake')?.annotations?.openWorldHint).toBe(true);
      // An item's type and a file item's formats are enums a client can offer and check.
      const schema = JSON.stringify(byName.get('define_intake')?.inputSchema);
      expect(schema).toContain('"enum":["image","file","file_list","text"');
      expect(schema).toContain('"enum":["png","jpg","svg"');
    });

    it('define_intake without an idempotency_key is safe to retry: an identical call returns the first intake', async () => {
      const args = {
        project_name: `Retried over ${transport}`,
        client: { email: `retry-${transport}@example.com` },
        items: ITEMS,
      };
      const first = ok<{ intake_id: string }>(await call(mcp, 'define_intake', args));
      // The same arguments in another order and with a null optional: the same canonical call.
      const againResult = await call(mcp, 'define_intake', {
        items: ITEMS,
        client: { email: `retry-${transport}@example.com` },
        project_name: `Retried over ${transport}`,
        due_date: null,
      });
      expect(ok<{ intake_id: string }>(againResult).intake_id).toBe(first.intake_id);
      expect(textOf(againResult)).toContain('an identical define_intake call in the last 24 hours');
      const listed = await rest.get<{ intakes: { projectName: string }[] }>(
        `/v1/intakes?client_email=retry-${transport}@example.com&limit=100`,
      );
      expect(listed.body.intakes).toHaveLength(1);
      // One invitation, not two.
      await vi.waitFor(
        async () => {
          const outbox = await rest.get<{ messages: unknown[] }>(
            `/v1/test_helpers/outbox?intake_id=${first.intake_id}`,
          );
          expect(outbox.body.messages).toHaveLength(1);
        },
        { timeout: 10_000, interval: 200 },
      );

      // Different arguments are a different intake; an explicit new key makes a deliberate twin.
      const other = ok<{ intake_id: string }>(
        await call(mcp, 'define_intake', { ...args, project_name: `${args.project_name} (2)` }),
      );
      expect(other.intake_id).not.toBe(first.intake_id);
      const twin = ok<{ intake_id: string }>(
        await call(mcp, 'define_intake', { ...args, idempotency_key: randomUUID() }),
      );
      expect(twin.intake_id).not.toBe(first.intake_id);
    });

    it('gives the same answers as the REST twins', async () => {
      const created = await rest.post<{ intake_id: string }>('/v1/intakes', {
        project_name: `Twin over ${transport}`,
        client: { email: 'twin@example.com' },
        items: ITEMS,
        send: false,
      });
      expect(created.status, created.text).toBe(201);
      const intake_id = created.body.intake_id;

      const viaTool = ok(await call(mcp, 'get_intake', { intake_id }));
      expect(viaTool).toEqual((await rest.get(`/v1/intakes/${intake_id}`)).body);
      const statusViaTool = ok(await call(mcp, 'get_intake_status', { intake_id }));
      expect(statusViaTool).toEqual((await rest.get(`/v1/intakes/${intake_id}/status`)).body);
      const listViaTool = ok(await call(mcp, 'list_intakes', { client_email: 'twin@example.com' }));
      expect(listViaTool).toEqual((await rest.get('/v1/intakes?client_email=twin@example.com')).body);

      const template = ok<{ id: string }>(
        await call(mcp, 'create_template', { name: `Basics ${transport}`, items: ITEMS }),
      );
      expect(ok(await call(mcp, 'get_template', { template_id: template.id }))).toEqual(
        (await rest.get(`/v1/templates/${template.id}`)).body,
      );
      expect(ok(await call(mcp, 'list_templates'))).toEqual((await rest.get('/v1/templates')).body);

      const sent = ok<{ status: string }>(await call(mcp, 'send_intake', { intake_id }));
      expect(sent.status).toBe('sent');
      expect(failure(await call(mcp, 'send_intake', { intake_id })).error).toBe('conflict');
      const added = ok<{ items_added: { key: string }[] }>(
        await call(mcp, 'add_items', {
          intake_id,
          items: [{ key: 'logo', label: 'Logo', type: 'image' }],
        }),
      );
      expect(added.items_added.map((i) => i.key)).toEqual(['logo']);
      expect(ok<{ status: string }>(await call(mcp, 'archive_intake', { intake_id })).status).toBe(
        'archived',
      );

      const deleted = await call(mcp, 'delete_intake', { intake_id });
      expect(deleted.isError ?? false, textOf(deleted)).toBe(false);
      expect(deleted.structuredContent).toBeUndefined();
      expect(textOf(deleted)).toContain('permanently deleted');
      expectError(await rest.get(`/v1/intakes/${intake_id}`), 404, 'not_found');

      const clock = ok<{ advanced_seconds: number }>(await call(mcp, 'advance_test_clock', { seconds: 60 }));
      expect(clock.advanced_seconds).toBe(60);
    });
  });

  it('registers, lists, tests and deletes a webhook with manage_webhook; follow_up names the events and the tool', async () => {
    const mcp = await connectHttp(server.url, testKey);
    const receiver = await startReceiver(answer(200));
    try {
      // No endpoint yet: define_intake says which events to register, and with which tool.
      const before = await call(mcp, 'define_intake', {
        project_name: 'Before a webhook',
        client: { email: 'hooks@example.com' },
        items: ITEMS,
      });
      const plan = ok<{ follow_up: { recommended: string; webhook: Json } }>(before).follow_up;
      expect(plan.recommended).toBe('schedule');
      expect(plan.webhook).toMatchObject({
        active_endpoints: 0,
        events: expect.arrayContaining(['item.submitted', 'intake.completed']),
        register_with: 'manage_webhook',
      });
      expect(textOf(before)).toContain('manage_webhook');

      const createdResult = await call(mcp, 'manage_webhook', {
        action: 'create',
        url: receiver.url,
        events: plan.webhook.events,
      });
      const created = ok<{ id: string; secret: string; events: string[] }>(createdResult);
      expect(created.id).toMatch(/^wh_/);
      expect(created.secret).toMatch(/^whsec_/);
      expect(textOf(createdResult)).toContain('Store its signing secret now');

      const listed = ok<{ webhooks: { id: string }[] }>(
        await call(mcp, 'manage_webhook', { action: 'list' }),
      );
      expect(listed.webhooks.map((w) => w.id)).toContain(created.id);
      const tested = ok<{ outcome: string; event: string }>(
        await call(mcp, 'manage_webhook', {
          action: 'test',
          webhook_id: created.id,
          event: 'item.submitted',
        }),
      );
      expect(tested).toMatchObject({ outcome: 'succeeded', event: 'item.submitted' });
      expect(receiver.requests.length).toBeGreaterThanOrEqual(1);

      const after = ok<{ follow_up: { recommended: string } }>(
        await call(mcp, 'define_intake', {
          project_name: 'After a webhook',
          client: { email: 'hooks@example.com' },
          items: ITEMS,
          send: false,
        }),
      );
      expect(after.follow_up.recommended).toBe('webhook');

      const deleted = await call(mcp, 'manage_webhook', { action: 'delete', webhook_id: created.id });
      expect(deleted.isError ?? false, textOf(deleted)).toBe(false);
      expect(
        ok<{ webhooks: unknown[] }>(await call(mcp, 'manage_webhook', { action: 'list' })).webhooks,
      ).toEqual([]);
      // Another account's endpoint id is simply not found; a key without admin is told what it lacks.
      expect(
        failure(await call(mcp, 'manage_webhook', { action: 'delete', webhook_id: created.id })).error,
      ).toBe('not_found');
      const reader = await connectHttp(server.url, readOnlyKey);
      const forbidden = failure(await call(reader, 'manage_webhook', { action: 'list' }));
      await reader.close();
      expect(forbidden.error).toBe('forbidden');
      expect(forbidden.message).toContain('admin');
    } finally {
      await receiver.close();
      await mcp.close();
    }
  });

  it('names every intake intake_id, links the portal in lists, reads the test outbox and explains secrets', async () => {
    const mcp = await connectHttp(server.url, testKey);
    const reader = await connectHttp(server.url, readOnlyKey);
    try {
      const defined = ok<{ intake_id: string; portal_url: string }>(
        await call(mcp, 'define_intake', {
          project_name: 'Shapes and secrets',
          client: { email: 'shapes@example.com' },
          items: [
            { key: 'about', label: 'About', type: 'text' },
            { key: 'password', label: 'Hosting password', type: 'secret' },
          ],
        }),
      );
      const intake_id = defined.intake_id;
      expect(ok<Json>(await call(mcp, 'get_intake', { intake_id })).intake_id).toBe(intake_id);
      expect(ok<Json>(await call(mcp, 'get_intake_status', { intake_id })).intake_id).toBe(intake_id);
      const listedIntakes = ok<{ intakes: Json[] }>(
        await call(mcp, 'list_intakes', { client_email: 'shapes@example.com' }),
      );
      expect(listedIntakes.intakes[0]).toMatchObject({ intake_id, portal_url: defined.portal_url });

      await vi.waitFor(
        async () => {
          const outbox = ok<{ messages: { to: string; intake_id: string }[] }>(
            await call(mcp, 'get_test_outbox', { intake_id }),
          );
          expect(outbox.messages).toContainEqual(
            expect.objectContaining({ to: 'shapes@example.com', intake_id }),
          );
        },
        { timeout: 10_000, interval: 200 },
      );
      const outboxText = textOf(await call(mcp, 'get_test_outbox', { intake_id }));
      expect(outboxText).toContain('email to shapes@example.com');

      ok(await call(mcp, 'simulate_client', { intake_id, action: 'submit' }));
      // A key without secrets:read: the value is withheld, and the summary says why and what to do.
      const withheld = await call(reader, 'get_intake_results', { intake_id, include_pending: true });
      const withheldItems = ok<{ items: { key: string; value: unknown; withheld?: string }[] }>(
        withheld,
      ).items;
      expect(withheldItems.find((i) => i.key === 'password')).toMatchObject({
        value: null,
        withheld: 'secrets:read',
      });
      expect(textOf(withheld)).toContain('lacks the secrets:read scope');
      expect(textOf(withheld)).not.toContain('File URLs');
      // The admin key reveals it once: "store it now".
      const revealed = await call(mcp, 'get_intake_results', { intake_id, include_pending: true });
      const secret = ok<{ items: { key: string; value: unknown }[] }>(revealed).items.find(
        (i) => i.key === 'password',
      );
      expect(typeof secret?.value).toBe('string');
      expect(textOf(revealed)).toContain('store it now');
      const again = await call(mcp, 'get_intake_results', { intake_id, include_pending: true });
      expect(textOf(again)).toContain('revealed once already');
      expect(textOf(again)).not.toContain('store it now');
    } finally {
      await reader.close();
      await mcp.close();
    }
  });

  it('refuses /mcp requests from a foreign Origin; its own origin, an allowed one and none pass', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const headers = { accept: 'application/json, text/event-stream' };
    const foreign = await rest.post('/mcp', list, {
      headers: { ...headers, origin: 'https://evil.example' },
    });
    expectError(foreign, 403, 'forbidden');
    expect(foreign.text).toContain('MCP_ALLOWED_ORIGINS');
    // Refused before the key is looked at: a rebinding page gets no answer about keys either.
    expectError(
      await client(server.url).post('/mcp', list, {
        headers: { ...headers, origin: 'http://evil.localhost' },
      }),
      403,
      'forbidden',
    );
    // The service's own origin is its BASE_URL's (a rebinding page's Host header proves nothing).
    for (const origin of [new URL(server.server.services.config.baseUrl).origin, ALLOWED_ORIGIN]) {
      const passed = await rest.post('/mcp', list, { headers: { ...headers, origin } });
      expect(passed.status, `${origin}: ${passed.text}`).toBe(200);
    }
    expect((await rest.post('/mcp', list, { headers })).status).toBe(200);
  });

  it('the stdio server starts at once without a key; login returns the URL and code, the next call picks the key up; logout forgets it', async () => {
    const credentials = `${server.dataDir}/signin-${database}/credentials.json`;
    const env = childEnv({
      INTAKE_API_KEY: '',
      INTAKE_CREDENTIALS_FILE: credentials,
      BASE_URL: server.url,
      LOG_LEVEL: 'silent',
    });
    const mcp = new McpClient({ name: 'intake-tests', version: '1.0.0' });
    await mcp.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: intakeCommand('mcp'),
        env: Object.fromEntries(
          Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        stderr: 'pipe',
      }),
    );
    try {
      // initialize answered and the tools listed without any sign-in.
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['login', 'logout', 'define_intake']));
      const notYet = failure(await call(mcp, 'list_intakes'));
      expect(notYet.error).toBe('unauthorized');
      expect(notYet.message).toContain('login');

      const started = await call(mcp, 'login');
      const pending = ok<{ status: string; user_code: string; verification_uri_complete: string }>(started);
      expect(pending.status).toBe('pending');
      expect(pending.user_code).toMatch(/^[B-Z]{4}-[B-Z]{4}$/);
      expect(pending.verification_uri_complete).toContain(`/dashboard/device?user_code=${pending.user_code}`);
      expect(textOf(started)).toContain(pending.user_code);

      const browser = await signedInOwner(server, accountId);
      const page = await (await browser.get(pending.verification_uri_complete)).text();
      // The device page ticks least privilege and test data first.
      expect(page).toMatch(/value="intakes:read"\s+checked/);
      expect(page).not.toMatch(/value="admin"\s+checked/);
      expect(page).toMatch(/value="test"\s+checked/);
      const approved = await browser.postForm(`${server.url}/dashboard/device`, {
        _csrf: hiddenField(page, '_csrf'),
        user_code: hiddenField(page, 'user_code'),
        scope: ['intakes:read', 'intakes:write'],
        mode: 'test',
        decision: 'approve',
      });
      expect(approved.status).toBe(200);

      // The next call picks the key up and works.
      const listed = await call(mcp, 'list_intakes', { limit: 1 });
      expect(listed.isError ?? false, textOf(listed)).toBe(false);
      const stored = JSON.parse(await readFile(credentials, 'utf8')) as Record<string, { api_key: string }>;
      expect(stored[server.url]?.api_key).toMatch(/^svc_test_/);
      expect(ok<{ status: string }>(await call(mcp, 'login')).status).toBe('signed_in');

      const out = ok<{ status: string; stored_key_removed: boolean }>(await call(mcp, 'logout'));
      expect(out).toEqual({ status: 'signed_out', stored_key_removed: true });
      expect(failure(await call(mcp, 'list_intakes')).error).toBe('unauthorized');
      expect(JSON.parse(await readFile(credentials, 'utf8'))).toEqual({});
    } finally {
      await mcp.close();
    }
  }, 60_000);

  it('a malformed INTAKE_API_KEY is an error on the first call, not a crash', async () => {
    const mcp = await connectStdio(server.url, 'svc_test_tooshort');
    try {
      expect((await mcp.listTools()).tools.length).toBeGreaterThan(TOOLS.length);
      const refused = failure(await call(mcp, 'list_intakes'));
      expect(refused.error).toBe('unauthorized');
      expect(refused.message).toContain('INTAKE_API_KEY is not an API key');
    } finally {
      await mcp.close();
    }
  }, 60_000);
});
