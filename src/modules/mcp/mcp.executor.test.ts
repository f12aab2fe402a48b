import { describe, expect, it } from 'vitest';
import { callTool, restRequestOf, type RestCaller, type RestRequest } from './mcp.executor.js';
import { StdioSignIn } from './mcp.signin.js';
import { fetchCaller, mcpStdioConfig } from './mcp.stdio.js';
import { TOOLS_BY_NAME } from './mcp.tools.js';

function tool(name: string) {
  const found = TOOLS_BY_NAME.get(name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
}

/** A caller that records the request and answers with a fixed status and body. */
function answering(status: number, body: unknown, seen: RestRequest[] = []): RestCaller {
  return {
    livemode: false,
    send(request) {
      seen.push(request);
      return Promise.resolve({ status, text: body === undefined ? '' : JSON.stringify(body) });
    },
  };
}

describe('tool call → REST request', () => {
  it('puts path parameters in the path, headers in headers and the rest in the JSON body', () => {
    const built = restRequestOf(tool('define_intake'), {
      project_name: 'X',
      client: { email: 'a@example.com' },
      idempotency_key: 'k-1',
      send: null,
    });
    expect(built).toEqual({
      request: {
        method: 'POST',
        path: '/v1/intakes',
        headers: { 'Idempotency-Key': 'k-1', 'content-type': 'application/json' },
        body: JSON.stringify({ project_name: 'X', client: { email: 'a@example.com' }, send: null }),
      },
    });
    expect(restRequestOf(tool('approve_item'), { intake_id: 'in_a/b', item_key: 'logo' })).toEqual({
      request: { method: 'POST', path: '/v1/intakes/in_a%2Fb/items/logo/approve', headers: {} },
    });
  });

  it('sends the arguments of a read as its query string, booleans as true/false', () => {
    expect(
      restRequestOf(tool('get_intake_results'), { intake_id: 'in_1', only_new: true, include_pending: null }),
    ).toEqual({ request: { method: 'GET', path: '/v1/intakes/in_1/results?only_new=true', headers: {} } });
    expect(restRequestOf(tool('list_intakes'), { status: 'sent', limit: 5 })).toEqual({
      request: { method: 'GET', path: '/v1/intakes?status=sent&limit=5', headers: {} },
    });
  });

  it('refuses unknown and missing arguments before any request, naming them', () => {
    expect(restRequestOf(tool('get_intake'), { intake_id: 'in_1', intakeId: 'in_1' })).toEqual({
      refused: {
        error: 'invalid_request',
        message: 'Unknown argument intakeId for get_intake (check the spelling); it takes: intake_id.',
      },
    });
    expect(restRequestOf(tool('approve_item'), { intake_id: 'in_1' })).toEqual({
      refused: { error: 'invalid_request', message: 'item_key is required: a non-empty string.' },
    });
  });
});

describe('REST answer → tool result', () => {
  it('passes a REST error object through unchanged, extra fields included', async () => {
    const error = {
      error: 'conflict',
      message: 'Used.',
      request_id: 'req_1',
      resource: { intake_id: 'in_1' },
    };
    const result = await callTool(tool('define_intake'), {}, answering(409, error));
    expect(result).toEqual({ isError: true, content: [{ type: 'text', text: JSON.stringify(error) }] });
  });

  it('answers a delete (204) with a summary only', async () => {
    const result = await callTool(tool('delete_intake'), { intake_id: 'in_1' }, answering(204, undefined));
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Intake in_1 and all its files were permanently deleted.' }],
    });
  });

  it('reports an unreachable service as a tool error', async () => {
    const key = `svc_test_${'a'.repeat(43)}`;
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const result = await callTool(tool('list_templates'), {}, fetchCaller('http://127.0.0.1:1', key));
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('service_unavailable') });
  });
});

describe('stdio configuration', () => {
  it('never stops on the API key and defaults BASE_URL like the server', () => {
    // Without a key the agent signs in with the login tool (or the stored key is used): not an error.
    expect(mcpStdioConfig({}).apiKey).toBeUndefined();
    // A malformed key is the first call's error (StdioSignIn), not a crash at start.
    expect(mcpStdioConfig({ INTAKE_API_KEY: 'sk_live_nope' }).apiKey).toBe('sk_live_nope');
    expect(() => mcpStdioConfig({ BASE_URL: 'not a url' })).toThrow(/BASE_URL/);
    const key = `svc_live_${'b'.repeat(43)}`;
    expect(mcpStdioConfig({ INTAKE_API_KEY: key, PORT: '4000' })).toEqual({
      apiKey: key,
      baseUrl: 'http://localhost:4000',
    });
    expect(mcpStdioConfig({ INTAKE_API_KEY: key, BASE_URL: 'https://intake.example.com/' }).baseUrl).toBe(
      'https://intake.example.com',
    );
  });
});

describe('stdio sign-in', () => {
  const options = {
    baseUrl: 'http://127.0.0.1:1',
    credentialsFile: '/nonexistent/credentials.json',
    note: () => {},
  };

  it('reports a malformed INTAKE_API_KEY on the first call, naming what to fix', async () => {
    const signIn = new StdioSignIn({ ...options, givenKey: 'svc_live_short' });
    const refused = await signIn.beforeRestCall();
    expect(refused?.isError).toBe(true);
    expect(refused?.content[0]).toMatchObject({
      text: expect.stringContaining('INTAKE_API_KEY is not an API key'),
    });
  });

  it('without a key, points the agent at the login tool; with one, lets calls through', async () => {
    const none = new StdioSignIn({ ...options, givenKey: undefined });
    expect((await none.beforeRestCall())?.content[0]).toMatchObject({
      text: expect.stringContaining('call the login tool'),
    });
    expect(none.tools().tools.map((t) => t.name)).toEqual(['login', 'logout']);
    const given = new StdioSignIn({ ...options, givenKey: `svc_test_${'c'.repeat(43)}` });
    expect(await given.beforeRestCall()).toBeUndefined();
    expect(given.caller(() => Promise.resolve({ status: 200, text: '' })).livemode).toBe(false);
  });
});

describe('derived idempotency keys', () => {
  const headerOf = (args: Record<string, unknown>) => {
    const built = restRequestOf(tool('define_intake'), args);
    if (!('request' in built)) throw new Error('refused');
    return built.request.headers['Idempotency-Key'];
  };
  const args = { project_name: 'P', client: { email: 'a@example.com', name: 'A' }, items: [{ key: 'a' }] };

  it('derives one key from the canonical arguments: order and null optionals do not matter', () => {
    const derived = headerOf(args);
    expect(derived).toMatch(/^mcp-args-[0-9a-f]{64}$/);
    expect(
      headerOf({ items: [{ key: 'a' }], client: { name: 'A', email: 'a@example.com' }, project_name: 'P' }),
    ).toBe(derived);
    expect(headerOf({ ...args, due_date: null })).toBe(derived);
    expect(headerOf({ ...args, project_name: 'Q' })).not.toBe(derived);
  });

  it('keeps a given idempotency_key as it is', () => {
    expect(headerOf({ ...args, idempotency_key: 'mine-1' })).toBe('mine-1');
  });
});
