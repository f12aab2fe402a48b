import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { parseScopes, redirectUriProblem } from '../../domain/oauth.js';
import { ADVERTISED_SCOPES, AGENT_SCOPES, SCOPES } from '../../domain/scopes.js';
import type { AppServices } from '../../services.js';
import { DEVICE_PAGE_PATH, devicePageRoutes } from './device.pages.js';
import { DEVICE_CLIENTS, pollDeviceAuthorization, startDeviceAuthorization } from './device.service.js';
import { AUTHORIZE_PATH, consentPageRoutes } from './oauth.pages.js';
import {
  AuthorizationServerMetadata,
  ClientRegistrationBody,
  OAuthErrorBody,
  ProtectedResourceMetadata,
  RegisteredClient,
} from './oauth.schemas.js';
import {
  authenticateClient,
  exchangeCode,
  OAuthError,
  refreshTokens,
  registerClient,
  revokeToken,
  type ClientCredentials,
} from './oauth.service.js';
import { acceptForms, field } from './page.js';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/** Where /mcp's 401 answers point OAuth clients (RFC 9728 §5.1). */
export function resourceMetadataUrl(baseUrl: string): string {
  return `${baseUrl}${PROTECTED_RESOURCE_PATH}/mcp`;
}

/**
 * Requests per rolling hour and network address to the unauthenticated OAuth endpoints, which write
 * rows: registrations and device codes are rare; token requests include a device's polls (one per
 * 5 seconds for at most 10 minutes).
 */
export const OAUTH_LIMITS = { register: 60, device: 120, token: 1200 } as const;

async function throttle(
  services: AppServices,
  request: FastifyRequest,
  kind: keyof typeof OAUTH_LIMITS,
): Promise<void> {
  const limit = OAUTH_LIMITS[kind];
  const decision = await services.limiter.hit(
    `oauth-${kind}:${request.ip}`,
    limit,
    services.clock.now().getTime(),
  );
  if (!decision.allowed) {
    throw new OAuthError(
      'rate_limited',
      `At most ${limit} such requests per hour from one address. Retry in ${decision.retryAfterSeconds} seconds.`,
      429,
      { 'Retry-After': String(decision.retryAfterSeconds) },
    );
  }
}

/** OAuth answers: `{error, error_description}` as clients expect, plus our `message` and `request_id`. */
function sendOAuthError(request: FastifyRequest, reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.status === 401) void reply.header('WWW-Authenticate', 'Basic realm="oauth"');
  void reply.headers(error.headers);
  return reply.code(error.status).header('Cache-Control', 'no-store').send({
    error: error.error,
    error_description: error.message,
    message: error.message,
    request_id: request.id,
  });
}

async function oauthAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  work: () => Promise<unknown>,
): Promise<FastifyReply> {
  try {
    const body = await work();
    return reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache').send(body);
  } catch (error) {
    if (error instanceof OAuthError) return sendOAuthError(request, reply, error);
    throw error;
  }
}

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1, form-encoded parts) or the request body. */
function clientCredentials(request: FastifyRequest): ClientCredentials {
  const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString();
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      const unescape = (text: string) => decodeURIComponent(text.replaceAll('+', ' '));
      return {
        clientId: unescape(decoded.slice(0, colon)),
        clientSecret: unescape(decoded.slice(colon + 1)),
      };
    }
  }
  return {
    clientId: field(request.body, 'client_id') || undefined,
    clientSecret: field(request.body, 'client_secret') || undefined,
  };
}

function required(body: unknown, name: string): string {
  const value = field(body, name);
  if (!value) throw new OAuthError('invalid_request', `${name} is required.`);
  return value;
}

/**
 * The service as an OAuth 2.1 authorization server for its own protected resource, /mcp:
 * discovery (RFC 9728, RFC 8414), dynamic client registration (RFC 7591), authorization code with
 * PKCE S256 (consent in oauth.pages.ts), refresh with rotation, revocation (RFC 7009) and the device
 * authorization grant (RFC 8628) for the CLI and the stdio MCP server.
 */
export async function oauthRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const db = services.db.kysely;
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Agent sign-in'];

  const protectedResource = () => ({
    resource: `${services.config.baseUrl}/mcp`,
    authorization_servers: [services.config.baseUrl],
    scopes_supported: [...ADVERTISED_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Intake service agent tools (MCP)',
  });
  for (const path of [PROTECTED_RESOURCE_PATH, `${PROTECTED_RESOURCE_PATH}/mcp`]) {
    api.get(path, {
      schema: {
        tags,
        summary: 'OAuth protected resource metadata for /mcp (RFC 9728)',
        response: { 200: ProtectedResourceMetadata },
      },
      handler: protectedResource,
    });
  }

  api.get('/.well-known/oauth-authorization-server', {
    schema: {
      tags,
      summary: 'OAuth authorization server metadata (RFC 8414)',
      response: { 200: AuthorizationServerMetadata },
    },
    // Read at request time: with PORT=0 the URLs follow the port bound after the routes were made.
    handler: () => {
      const base = services.config.baseUrl;
      return {
        issuer: base,
        authorization_endpoint: `${services.config.appUrl}${AUTHORIZE_PATH}`,
        token_endpoint: `${base}/oauth/token`,
        registration_endpoint: `${base}/oauth/register`,
        revocation_endpoint: `${base}/oauth/revoke`,
        device_authorization_endpoint: `${base}/oauth/device_authorization`,
        scopes_supported: [...ADVERTISED_SCOPES],
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_GRANT],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
        revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      };
    },
  });

  api.post('/oauth/register', {
    schema: {
      tags,
      summary: 'Register an OAuth client (RFC 7591)',
      description:
        'Open registration, as MCP clients expect. Redirect URIs: https, http to a loopback address, or a native app private-use scheme in reverse-domain form (com.example.app:/callback, RFC 8252). token_endpoint_auth_method none (public client, PKCE) or a client secret, returned once.',
      body: ClientRegistrationBody,
      response: { 201: RegisteredClient, 400: OAuthErrorBody, 429: OAuthErrorBody },
    },
    handler: async (request, reply) => {
      try {
        await throttle(services, request, 'register');
      } catch (error) {
        if (error instanceof OAuthError) return sendOAuthError(request, reply, error);
        throw error;
      }
      const problems = request.body.redirect_uris.map(redirectUriProblem).filter(Boolean);
      if (problems.length > 0) {
        return sendOAuthError(request, reply, new OAuthError('invalid_redirect_uri', problems.join('; ')));
      }
      const registered = await registerClient(
        db,
        {
          redirect_uris: request.body.redirect_uris,
          client_name: request.body.client_name,
          token_endpoint_auth_method: request.body.token_endpoint_auth_method,
        },
        services.clock.now(),
      );
      return reply.code(201).header('Cache-Control', 'no-store').send(registered);
    },
  });

  // Form-encoded bodies (RFC 6749 token requests, the consent and device forms) in this context only.
  await app.register((forms, _options, done) => {
    acceptForms(forms);
    const hidden = { schema: { hide: true } };

    forms.post('/oauth/token', hidden, (request, reply) =>
      oauthAnswer(request, reply, async () => {
        await throttle(services, request, 'token');
        const grantType = required(request.body, 'grant_type');
        const at = services.clock.now();
        if (grantType === DEVICE_GRANT) {
          return pollDeviceAuthorization(db, required(request.body, 'device_code'), at, request.id);
        }
        const client = await authenticateClient(db, clientCredentials(request));
        if (grantType === 'authorization_code') {
          return exchangeCode(
            db,
            client,
            {
              code: required(request.body, 'code'),
              redirectUri: required(request.body, 'redirect_uri'),
              codeVerifier: required(request.body, 'code_verifier'),
            },
            at,
            request.id,
          );
        }
        if (grantType === 'refresh_token') {
          const scopes = parseScopes(field(request.body, 'scope'));
          if (!scopes) throw new OAuthError('invalid_scope', `Scopes are: ${SCOPES.join(', ')}.`);
          return refreshTokens(
            db,
            client,
            { refreshToken: required(request.body, 'refresh_token'), scopes },
            at,
            request.id,
          );
        }
        throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported.`);
      }),
    );

    forms.post('/oauth/revoke', hidden, (request, reply) =>
      oauthAnswer(request, reply, async () => {
        const client = await authenticateClient(db, clientCredentials(request));
        await revokeToken(db, client, required(request.body, 'token'), services.clock.now());
        return {};
      }),
    );

    forms.post('/oauth/device_authorization', hidden, (request, reply) =>
      oauthAnswer(request, reply, async () => {
        await throttle(services, request, 'device');
        const clientId = field(request.body, 'client_id') || 'intake-cli';
        const clientName = DEVICE_CLIENTS[clientId];
        if (!clientName) {
          throw new OAuthError(
            'invalid_client',
            `Unknown client_id: use ${Object.keys(DEVICE_CLIENTS).join(' or ')}.`,
            401,
          );
        }
        const scopes = parseScopes(field(request.body, 'scope'));
        if (!scopes) throw new OAuthError('invalid_scope', `Scopes are: ${SCOPES.join(', ')}.`);
        return startDeviceAuthorization(
          db,
          { clientName, scopes: scopes.length > 0 ? scopes : [...AGENT_SCOPES] },
          services.clock.now(),
          `${services.config.appUrl}${DEVICE_PAGE_PATH}`,
        );
      }),
    );

    consentPageRoutes(forms, services);
    devicePageRoutes(forms, services);
    done();
  });
}
