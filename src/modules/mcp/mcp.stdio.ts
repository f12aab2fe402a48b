import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { ConfigError } from '../../config.js';
import { credentialsPath } from '../oauth/device.client.js';
import type { RestCaller, RestRequest, RestResponse } from './mcp.executor.js';
import { createMcpServer } from './mcp.server.js';
import { StdioSignIn } from './mcp.signin.js';

/** Long enough for advance_test_clock, which runs every job due by the new test time before answering. */
const REQUEST_TIMEOUT_MS = 120_000;

const McpEnv = z.object({
  // Checked by the first tool call, not here: a malformed key must not stop the server (the host
  // would only see "connection closed"); the agent is told what to fix instead.
  INTAKE_API_KEY: z.string().optional(),
  BASE_URL: z
    .url({ error: 'BASE_URL must be the URL of the intake service, e.g. http://localhost:3000' })
    .optional(),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
});

/**
 * What the stdio server needs: the service's address (BASE_URL, as the server reads it) and the key
 * from INTAKE_API_KEY, if set (without it the agent signs in with the login tool).
 */
export function mcpStdioConfig(env: NodeJS.ProcessEnv): { apiKey: string | undefined; baseUrl: string } {
  const blankless = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = McpEnv.safeParse(blankless);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => issue.message).join('\n'));
  const baseUrl = (parsed.data.BASE_URL ?? `http://localhost:${parsed.data.PORT}`).replace(/\/+$/, '');
  return { apiKey: parsed.data.INTAKE_API_KEY, baseUrl };
}

/** The tools' REST requests, sent over HTTP to the service at BASE_URL with the key of the moment. */
export function fetchSender(baseUrl: string) {
  return async (apiKey: string, request: RestRequest): Promise<RestResponse> => {
    const response = await fetch(baseUrl + request.path, {
      method: request.method,
      headers: { ...request.headers, authorization: `Bearer ${apiKey}`, 'user-agent': 'intake-mcp' },
      body: request.body ?? null,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return { status: response.status, text: await response.text() };
  };
}

/** A caller with one fixed key. */
export function fetchCaller(baseUrl: string, apiKey: string): RestCaller {
  const send = fetchSender(baseUrl);
  return { livemode: apiKey.startsWith('svc_live_'), send: (request) => send(apiKey, request) };
}

/**
 * `cli mcp`: the agent tools over stdio, until the client closes stdin. Stdout carries only the
 * protocol. It answers at once: the key is INTAKE_API_KEY, else the one `cli login` (or the login
 * tool) stored for this BASE_URL, else none until the agent calls login.
 */
export async function serveMcpOverStdio(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { baseUrl, apiKey } = mcpStdioConfig(env);
  const signIn = new StdioSignIn({
    baseUrl,
    givenKey: apiKey,
    credentialsFile: credentialsPath(env),
    note: (line) => process.stderr.write(`${line}\n`),
  });
  const server = createMcpServer(signIn.caller(fetchSender(baseUrl)), signIn.tools());
  await server.connect(new StdioServerTransport());
  process.stdin.once('end', () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
