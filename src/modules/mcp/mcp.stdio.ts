import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { ConfigError } from '../../config.js';
import { API_KEY_PATTERN } from '../keys/keys.domain.js';
import { credentialsPath, deviceLogin, readCredential, storeCredential } from '../oauth/device.client.js';
import type { RestCaller } from './mcp.executor.js';
import { createMcpServer } from './mcp.server.js';

/** Long enough for advance_test_clock, which runs every job due by the new test time before answering. */
const REQUEST_TIMEOUT_MS = 120_000;

const McpEnv = z.object({
  INTAKE_API_KEY: z
    .string()
    .regex(API_KEY_PATTERN, 'INTAKE_API_KEY must be an API key: svc_live_… or svc_test_…')
    .optional(),
  BASE_URL: z
    .url({ error: 'BASE_URL must be the URL of the intake service, e.g. http://localhost:3000' })
    .optional(),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
});

/**
 * What the stdio server needs: the service's address (BASE_URL, as the server reads it) and the key
 * from INTAKE_API_KEY, if set (without it the server signs in by device code: see serveMcpOverStdio).
 */
export function mcpStdioConfig(env: NodeJS.ProcessEnv): { apiKey: string | undefined; baseUrl: string } {
  const blankless = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = McpEnv.safeParse(blankless);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => issue.message).join('\n'));
  const baseUrl = (parsed.data.BASE_URL ?? `http://localhost:${parsed.data.PORT}`).replace(/\/+$/, '');
  return { apiKey: parsed.data.INTAKE_API_KEY, baseUrl };
}

/** The tools' REST requests, sent over HTTP to the service at BASE_URL. */
export function fetchCaller(baseUrl: string, apiKey: string): RestCaller {
  return {
    livemode: apiKey.startsWith('svc_live_'),
    async send(request) {
      const response = await fetch(baseUrl + request.path, {
        method: request.method,
        headers: { ...request.headers, authorization: `Bearer ${apiKey}`, 'user-agent': 'intake-mcp' },
        body: request.body ?? null,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      return { status: response.status, text: await response.text() };
    },
  };
}

/**
 * The key the tools act with: INTAKE_API_KEY, else the one `cli login` stored for this BASE_URL, else a
 * new one through the device sign-in (code and URL on stderr: stdout carries only the protocol).
 */
async function resolveApiKey(
  env: NodeJS.ProcessEnv,
  baseUrl: string,
  given: string | undefined,
): Promise<string> {
  if (given) return given;
  const file = credentialsPath(env);
  const stored = readCredential(file, baseUrl);
  if (stored) return stored.api_key;
  process.stderr.write(
    'INTAKE_API_KEY is not set and no stored key was found: signing in with a device code.\n',
  );
  const credential = await deviceLogin({
    baseUrl,
    clientId: 'intake-mcp',
    scopes: ['intakes:read', 'intakes:write'],
    say: (line) => process.stderr.write(`${line}\n`),
  });
  storeCredential(file, baseUrl, credential);
  process.stderr.write(`Signed in; key stored in ${file}.\n`);
  return credential.api_key;
}

/** `cli mcp`: the agent tools over stdio, until the client closes stdin. Stdout carries only the protocol. */
export async function serveMcpOverStdio(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = mcpStdioConfig(env);
  const { baseUrl } = config;
  const apiKey = await resolveApiKey(env, baseUrl, config.apiKey);
  const server = createMcpServer(fetchCaller(baseUrl, apiKey));
  await server.connect(new StdioServerTransport());
  process.stdin.once('end', () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
