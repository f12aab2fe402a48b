import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isPkceChallenge, parseScopes } from '../../domain/oauth.js';
import { SCOPES, type Scope } from '../../domain/scopes.js';
import type { AppServices } from '../../services.js';
import { assertCsrf, csrfToken, requireUser, type SignedInUser } from '../sessions/session.js';
import { html } from '../portal/page/html.js';
import { chosenGrant, modeChoices, scopeChoices } from './grant-form.js';
import { findClient, type OAuthClientRow } from './oauth.repository.js';
import { issueCode, redirectUrisOf } from './oauth.service.js';
import { field, sendPage } from './page.js';

export const AUTHORIZE_PATH = '/oauth/authorize';

// ---------------------------------------------------------------------------------------------------
// Authorization code: the consent page

interface AuthorizeParams {
  client: OAuthClientRow;
  redirectUri: string;
  state: string;
  codeChallenge: string;
  requestedScopes: Scope[];
  resource: string | null;
}

type Checked =
  | { ok: true; params: AuthorizeParams }
  /** Not safe to redirect (unknown client or redirect URI): shown to the user. */
  | { ok: false; page: string }
  /** Told to the client at its redirect URI (RFC 6749 §4.1.2.1). */
  | { ok: false; redirect: string };

function errorRedirect(
  redirectUri: string,
  state: string,
  error: string,
  description: string,
  issuer: string,
): string {
  const url = new URL(redirectUri);
  url.searchParams.set('error', error);
  url.searchParams.set('error_description', description);
  if (state) url.searchParams.set('state', state);
  url.searchParams.set('iss', issuer);
  return url.toString();
}

async function checkAuthorizeRequest(services: AppServices, source: unknown): Promise<Checked> {
  const client = await findClient(services.db.kysely, field(source, 'client_id'));
  if (!client) return { ok: false, page: 'Unknown client_id: the application must register first.' };
  const registered = redirectUrisOf(client);
  const redirectUri = field(source, 'redirect_uri') || (registered.length === 1 ? (registered[0] ?? '') : '');
  if (!registered.includes(redirectUri)) {
    return { ok: false, page: 'The redirect_uri is not one the application registered.' };
  }
  const state = field(source, 'state');
  const issuer = services.config.baseUrl;
  const fail = (error: string, description: string): Checked => ({
    ok: false,
    redirect: errorRedirect(redirectUri, state, error, description, issuer),
  });
  if (field(source, 'response_type') !== 'code')
    return fail('unsupported_response_type', 'response_type must be code.');
  const codeChallenge = field(source, 'code_challenge');
  if (field(source, 'code_challenge_method') !== 'S256' || !isPkceChallenge(codeChallenge)) {
    return fail('invalid_request', 'PKCE is required: code_challenge with code_challenge_method S256.');
  }
  const requestedScopes = parseScopes(field(source, 'scope'));
  if (!requestedScopes) return fail('invalid_scope', `Scopes are: ${SCOPES.join(', ')}.`);
  const resource = field(source, 'resource') || null;
  const ours = [`${services.config.baseUrl}/mcp`, services.config.baseUrl, `${services.config.baseUrl}/`];
  if (resource && !ours.includes(resource)) return fail('invalid_target', `resource must be ${ours[0]}.`);
  return { ok: true, params: { client, redirectUri, state, codeChallenge, requestedScopes, resource } };
}

function consentPage(
  reply: FastifyReply,
  request: FastifyRequest,
  user: SignedInUser,
  params: AuthorizeParams,
  source: unknown,
  problem?: string,
): FastifyReply {
  const requested =
    params.requestedScopes.length > 0 ? params.requestedScopes : ['intakes:read', 'intakes:write'];
  const passOn = [
    'response_type',
    'client_id',
    'redirect_uri',
    'state',
    'code_challenge',
    'code_challenge_method',
    'resource',
    'original_scope',
  ];
  const hidden = passOn.map((name) => {
    const value =
      name === 'original_scope'
        ? field(source, 'original_scope') || field(source, 'scope')
        : field(source, name);
    return html`<input type="hidden" name="${name}" value="${value}" />`;
  });
  const target = new URL(params.redirectUri);
  return sendPage(
    reply,
    `Allow ${params.client.name}?`,
    html`<h1>Allow ${params.client.name} to use your account?</h1>
      <p>
        Signed in as ${user.email}. After you allow it, the application gets an API key with the access you
        tick below (valid one hour, renewed by the application until you revoke it). It returns to
        <strong
          >${target.protocol === 'https:' || target.protocol === 'http:' ? target.host : target.protocol}</strong
        >.
      </p>
      ${problem ? html`<p class="error">${problem}</p>` : ''}
      <form method="post" action="${AUTHORIZE_PATH}">
        <input type="hidden" name="_csrf" value="${csrfToken(request, reply)}" />
        ${hidden} ${scopeChoices(requested, user.role)} ${modeChoices()}
        <div class="actions">
          <button type="submit" name="decision" value="allow">Allow</button>
          <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
        </div>
      </form>`,
  );
}

/** The consent page of the authorization code flow (GET shows it, POST answers it). */
export function consentPageRoutes(app: FastifyInstance, services: AppServices): void {
  const hidden = { schema: { hide: true } };
  const db = services.db.kysely;

  app.get(AUTHORIZE_PATH, hidden, async (request, reply) => {
    const checked = await checkAuthorizeRequest(services, request.query);
    if (!checked.ok) {
      return 'page' in checked
        ? sendPage(
            reply,
            'Authorization',
            html`<h1>Authorization failed</h1>
              <p class="error">${checked.page}</p>`,
            400,
          )
        : reply.code(303).header('Location', checked.redirect).send();
    }
    const user = await requireUser(request, reply);
    if (!user) return reply;
    return consentPage(reply, request, user, checked.params, request.query);
  });

  app.post(AUTHORIZE_PATH, hidden, async (request, reply) => {
    const user = await requireUser(request, reply);
    if (!user) return reply;
    assertCsrf(request, field(request.body, '_csrf'));
    const source = {
      ...(request.body as Record<string, unknown>),
      scope: field(request.body, 'original_scope'),
    };
    const checked = await checkAuthorizeRequest(services, source);
    if (!checked.ok) {
      return 'page' in checked
        ? sendPage(
            reply,
            'Authorization',
            html`<h1>Authorization failed</h1>
              <p class="error">${checked.page}</p>`,
            400,
          )
        : reply.code(303).header('Location', checked.redirect).send();
    }
    const { params } = checked;
    const issuer = services.config.baseUrl;
    if (field(request.body, 'decision') !== 'allow') {
      return reply
        .code(303)
        .header(
          'Location',
          errorRedirect(params.redirectUri, params.state, 'access_denied', 'The user denied access.', issuer),
        )
        .send();
    }
    const grant = chosenGrant(request.body, user.role);
    if (typeof grant === 'string') return consentPage(reply, request, user, params, source, grant);
    const code = await issueCode(
      db,
      {
        ...grant,
        client: params.client,
        accountId: user.accountId,
        userId: user.userId,
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        resource: params.resource,
      },
      services.clock.now(),
    );
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state) target.searchParams.set('state', params.state);
    target.searchParams.set('iss', issuer);
    return reply.code(303).header('Location', target.toString()).send();
  });
}
