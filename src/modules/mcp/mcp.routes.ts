import type * as McpTransportModule from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_SCOPES } from '../../domain/scopes.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { API_KEY_PATTERN, hashApiKey } from '../keys/keys.domain.js';
import { findActiveKeyByHash } from '../keys/keys.service.js';
import type { RestCaller } from './mcp.executor.js';
import type * as McpServerModule from './mcp.server.js';
import { resourceMetadataUrl } from '../oauth/oauth.routes.js';

/**
 * The MCP SDK and the tools' server, loaded by the first POST /mcp a process answers: a process that
 * serves no agent over HTTP never loads them (about 10 MB of resident memory).
 */
let mcpModules: Promise<[typeof McpServerModule, typeof McpTransportModule]> | undefined;
const loadMcp = () =>
  (mcpModules ??= Promise.all([
    import('./mcp.server.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  ]));

/** The tools' REST requests, handed to this very app in process (no socket, same hooks). */
function injectCaller(app: FastifyInstance, authorization: string, livemode: boolean): RestCaller {
  return {
    livemode,
    async send(request) {
      const response = await app.inject({
        method: request.method,
        url: request.path,
        headers: { ...request.headers, authorization, 'user-agent': 'intake-mcp' },
        ...(request.body === undefined ? {} : { payload: request.body }),
      });
      return { status: response.statusCode, text: response.body };
    },
  };
}

/**
 * MCP's transport rules: a server checks the Origin header so that a web page cannot drive it through
 * DNS rebinding. No Origin (agents, CLIs), the service's own origins or an allowed one pass; any other
 * is refused before the key is even looked at.
 */
function checkOrigin(services: AppServices, request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  const { baseUrl, appUrl, mcpAllowedOrigins } = services.config;
  const allowed = new Set([new URL(baseUrl).origin, new URL(appUrl).origin, ...mcpAllowedOrigins]);
  if (allowed.has(origin)) return;
  throw new ApiError(
    'forbidden',
    `Origin ${origin.slice(0, 200)} may not call /mcp: only the service's own origin and those in MCP_ALLOWED_ORIGINS.`,
  );
}

/**
 * The caller's key, checked as REST checks it (same 401 answers). An MCP message (initialize,
 * tools/list) is not an API request and does not count against the key's hourly budget; every tool
 * call does, through the REST request it makes.
 */
async function authenticate(services: AppServices, request: FastifyRequest): Promise<{ livemode: boolean }> {
  // /mcp is an OAuth protected resource: every 401 tells OAuth-aware clients where to sign in (RFC 9728)
  // and which scopes to ask for (RFC 6750 §3): least privilege, not everything the server knows.
  const challenge = {
    'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl(services.config.baseUrl)}", scope="${AGENT_SCOPES.join(' ')}"`,
  };
  const header = request.headers.authorization;
  if (!header) {
    throw new ApiError(
      'unauthorized',
      'Missing API key: send the header Authorization: Bearer svc_live_… or svc_test_…, or sign in with OAuth.',
      {},
      challenge,
    );
  }
  const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (!token || !API_KEY_PATTERN.test(token)) {
    throw new ApiError(
      'unauthorized',
      'Invalid API key: expected Authorization: Bearer svc_live_… or svc_test_….',
      {},
      { 'WWW-Authenticate': `${challenge['WWW-Authenticate']}, error="invalid_token"` },
    );
  }
  const found = await findActiveKeyByHash(services.db.kysely, hashApiKey(token), services.clock.now());
  if (!found) {
    throw new ApiError(
      'unauthorized',
      'Invalid, revoked or expired API key.',
      {},
      {
        'WWW-Authenticate': `${challenge['WWW-Authenticate']}, error="invalid_token"`,
      },
    );
  }
  return { livemode: found.key.livemode === 1 };
}

function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  return new Request(new URL(request.url, 'http://127.0.0.1'), { method: request.method, headers });
}

async function sendWebResponse(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  void reply.code(response.status);
  response.headers.forEach((value, name) => void reply.header(name, value));
  const text = await response.text();
  return reply.send(text === '' ? undefined : text);
}

/**
 * The agent tools over Streamable HTTP at /mcp, stateless: every POST carries its own JSON-RPC
 * messages and gets a JSON answer. Without sessions there is no server-to-client stream to GET and
 * no session to DELETE, so those answer 405 (which MCP clients expect from such a server).
 */
export function mcpRoutes(app: FastifyInstance, services: AppServices): void {
  const schema = { hide: true };

  app.post('/mcp', { schema }, async (request, reply) => {
    checkOrigin(services, request);
    const { livemode } = await authenticate(services, request);
    const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await loadMcp();
    const server = createMcpServer(injectCaller(app, request.headers.authorization ?? '', livemode));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      const response = await transport.handleRequest(webRequestOf(request), { parsedBody: request.body });
      return await sendWebResponse(reply, response);
    } finally {
      await server.close();
    }
  });

  const notOffered = async (request: FastifyRequest, reply: FastifyReply) => {
    checkOrigin(services, request);
    await authenticate(services, request);
    void reply.header('Allow', 'POST');
    throw new ApiError(
      'method_not_allowed',
      'This MCP endpoint is stateless: send JSON-RPC messages with POST /mcp (no event stream, no session to end).',
    );
  };
  app.get('/mcp', { schema }, notOffered);
  app.delete('/mcp', { schema }, notOffered);
}
