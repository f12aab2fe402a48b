import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceLogin } from '../src/modules/oauth/device.client.js';
import { DATABASES, childEnv } from './helpers/env.js';
import { client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { hiddenField, signedInOwner, type SignedInBrowser } from './helpers/signed-in.js';
import { intakeCommand } from './helpers/processes.js';

type Body = Record<string, unknown>;
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** An MCP client's OAuth state kept in memory; the "browser redirect" is recorded for the test to follow. */
class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;

  get redirectUrl(): string {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    return 'state-123';
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

/** Follows the consent page as the signed-in user would: tick the scopes and world, press a button. */
async function consent(
  browser: SignedInBrowser,
  authorizationUrl: string,
  choice: { scopes: string[]; mode: 'live' | 'test'; decision: 'allow' | 'deny' },
): Promise<URL> {
  const page = await browser.get(authorizationUrl);
  const text = await page.text();
  expect(page.status, text).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  const fields: Record<string, string | string[]> = {
    scope: choice.scopes,
    mode: choice.mode,
    decision: choice.decision,
  };
  for (const name of [
    '_csrf',
    'response_type',
    'client_id',
    'redirect_uri',
    'state',
    'code_challenge',
    'code_challenge_method',
    'resource',
    'original_scope',
  ]) {
    fields[name] = hiddenField(text, name);
  }
  const answer = await browser.postForm(new URL('/oauth/authorize', authorizationUrl).toString(), fields);
  expect(answer.status, await answer.clone().text()).toBe(303);
  return new URL(answer.headers.get('location') ?? '');
}

function tokenRequest(baseUrl: string, form: Record<string, string>) {
  return client(baseUrl).call<Body>('POST', '/oauth/token', {
    rawBody: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

describe.each(DATABASES)('agent sign-in: OAuth 2.1 for /mcp on %s', (database) => {
  let server: TestServer;
  let baseUrl: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    baseUrl = server.server.services.config.baseUrl;
  });
  afterAll(async () => {
    await server.stop();
  });

  it('advertises /mcp as a protected resource and this service as its authorization server', async () => {
    const anonymous = client(baseUrl);
    const unauthorized = await anonymous.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expectError(unauthorized, 401, 'unauthorized');
    const challenge = unauthorized.headers.get('www-authenticate') ?? '';
    expect(challenge).toBe(
      `Bearer resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp", scope="intakes:read intakes:write"`,
    );

    const resource = await anonymous.get<Body>('/.well-known/oauth-protected-resource/mcp');
    expect(resource.body).toMatchObject({ resource: `${baseUrl}/mcp`, authorization_servers: [baseUrl] });
    const metadata = await anonymous.get<Body>('/.well-known/oauth-authorization-server');
    expect(metadata.body).toMatchObject({
      issuer: baseUrl,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      registration_endpoint: `${baseUrl}/oauth/register`,
      device_authorization_endpoint: `${baseUrl}/oauth/device_authorization`,
    });
  });

  it('an OAuth-aware MCP client connects with the URL alone (SDK client, consent over HTTP)', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const provider = new MemoryOAuthProvider();
    const mcpUrl = new URL(`${baseUrl}/mcp`);

    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new McpClient({ name: 'agent', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(provider.client?.client_id).toMatch(/^oac_/);
    const authorizationUrl = provider.authorizationUrl;
    if (!authorizationUrl) throw new Error('The SDK did not ask to open the authorization page');
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const redirected = await consent(browser, authorizationUrl.toString(), {
      scopes: ['intakes:read', 'intakes:write'],
      mode: 'test',
      decision: 'allow',
    });
    expect(`${redirected.origin}${redirected.pathname}`).toBe(REDIRECT_URI);
    expect(redirected.searchParams.get('state')).toBe('state-123');
    expect(redirected.searchParams.get('iss')).toBe(baseUrl);
    await first.finishAuth(redirected.searchParams.get('code') ?? '');

    const tokens = provider.saved;
    expect(tokens?.access_token).toMatch(/^svc_test_/);
    expect(tokens?.expires_in).toBe(3600);
    expect(tokens?.scope).toBe('intakes:read intakes:write');

    const agent = new McpClient({ name: 'agent', version: '1.0.0' });
    await agent.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const tools = await agent.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain('list_intakes');
    const listed = await agent.callTool({ name: 'list_intakes', arguments: {} });
    expect(listed.isError ?? false).toBe(false);
    await agent.close();

    // The token is an API key with exactly the granted scopes, in the chosen world.
    const rest = client(baseUrl, tokens?.access_token);
    expect((await rest.get('/v1/intakes')).status).toBe(200);
    expectError(await rest.post('/v1/keys', { name: 'x', scopes: ['admin'] }), 403, 'forbidden');

    const owner = client(baseUrl, account.live_key);
    const audit = await client(baseUrl, account.test_key).get<{ entries: Body[] }>('/v1/audit?limit=20');
    const issued = audit.body.entries.find((entry) => entry.action === 'oauth.token_issued');
    expect(issued?.actor).toEqual({ type: 'user', id: browser.userId });
    expect((await owner.get('/v1/account')).status).toBe(200);

    const testAdmin = client(baseUrl, account.test_key);
    const keyIds = async () =>
      (await testAdmin.get<{ keys: Body[] }>('/v1/keys')).body.keys.map((key) => key.id);
    expect(await keyIds()).toContain(issued?.resource_id);

    // Expiry is enforced: a token past its hour is refused, by /mcp and by REST, and leaves the key list.
    const db = server.server.services.db.kysely;
    await db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', issued?.resource_id as string)
      .execute();
    const expired = await client(baseUrl, tokens?.access_token).post('/mcp', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
    });
    expectError(expired, 401, 'unauthorized');
    expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expectError(await rest.get('/v1/intakes'), 401, 'unauthorized');
    expect(await keyIds()).not.toContain(issued?.resource_id);

    // Refresh: new tokens; the old refresh token is spent.
    const clientId = provider.client?.client_id ?? '';
    const refreshed = await tokenRequest(baseUrl, {
      grant_type: 'refresh_token',
      refresh_token: tokens?.refresh_token ?? '',
      client_id: clientId,
    });
    expect(refreshed.status, refreshed.text).toBe(200);
    const renewed = client(baseUrl, refreshed.body.access_token as string);
    expect((await renewed.get('/v1/intakes')).status).toBe(200);

    // Revocation (RFC 7009) of the refresh token ends its access token too.
    const revoked = await client(baseUrl).call('POST', '/oauth/revoke', {
      rawBody: new URLSearchParams({
        token: refreshed.body.refresh_token as string,
        client_id: clientId,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(revoked.status).toBe(200);
    expectError(await renewed.get('/v1/intakes'), 401, 'unauthorized');
    const afterRevoke = await tokenRequest(baseUrl, {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token as string,
      client_id: clientId,
    });
    expect(afterRevoke.body.error).toBe('invalid_grant');
    const replay = await tokenRequest(baseUrl, {
      grant_type: 'refresh_token',
      refresh_token: tokens?.refresh_token ?? '',
      client_id: clientId,
    });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
  });

  it('refuses what OAuth 2.1 forbids: no PKCE, unknown redirects, code reuse, wrong verifier, no CSRF', async () => {
    const account = await server.createAccount({ plan: 'free' });
    const browser = await signedInOwner(server, account.account_id);
    const anonymous = client(baseUrl);

    const evil = await anonymous.post<Body>('/oauth/register', { redirect_uris: ['http://evil.example/cb'] });
    expect(evil.status, evil.text).toBe(400);
    expect(evil.body.error).toBe('invalid_redirect_uri');
    const registered = await anonymous.post<Body>('/oauth/register', {
      client_name: 'Confidential agent',
      redirect_uris: [REDIRECT_URI],
    });
    expect(registered.status, registered.text).toBe(201);
    const clientId = registered.body.client_id as string;
    const clientSecret = registered.body.client_secret as string;
    expect(clientSecret).toMatch(/^ocs_/);

    const { verifier, challenge } = pkcePair();
    const authorize = (params: Record<string, string>) =>
      `${baseUrl}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        state: 's1',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...params,
      }).toString()}`;

    // Without a session: off to sign in, coming back here afterwards.
    const signedOut = await fetch(authorize({}), { redirect: 'manual' });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get('location')).toMatch(
      /^\/dashboard\/sign-in\?return_to=%2Foauth%2Fauthorize/,
    );

    const noPkce = await browser.get(authorize({ code_challenge_method: 'plain' }));
    expect(noPkce.status).toBe(303);
    expect(new URL(noPkce.headers.get('location') ?? '').searchParams.get('error')).toBe('invalid_request');
    expect((await browser.get(authorize({ redirect_uri: 'http://127.0.0.1:9/other' }))).status).toBe(400);
    expect((await browser.get(authorize({ client_id: 'oac_unknown' }))).status).toBe(400);

    const forged = await browser.postForm(`${baseUrl}/oauth/authorize`, {
      _csrf: 'forged',
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'admin',
      mode: 'live',
      decision: 'allow',
    });
    expect(forged.status).toBe(403);

    const denied = await consent(browser, authorize({}), {
      scopes: ['admin'],
      mode: 'live',
      decision: 'deny',
    });
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe('s1');

    const allowed = await consent(browser, authorize({ scope: 'admin' }), {
      scopes: ['admin'],
      mode: 'live',
      decision: 'allow',
    });
    const code = allowed.searchParams.get('code') ?? '';
    const exchange = (extra: Record<string, string>) =>
      tokenRequest(baseUrl, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: clientId,
        client_secret: clientSecret,
        ...extra,
      });
    expect((await exchange({ client_secret: 'ocs_wrong' })).status).toBe(401);
    const wrongVerifier = await exchange({ code_verifier: pkcePair().verifier });
    expect(wrongVerifier.body.error).toBe('invalid_grant');
    const good = await exchange({});
    expect(good.status, good.text).toBe(200);
    expect(good.body.access_token).toMatch(/^svc_live_/);
    expect(good.headers.get('cache-control')).toBe('no-store');
    const again = await exchange({});
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    expect(
      (
        await tokenRequest(baseUrl, {
          grant_type: 'password',
          client_id: clientId,
          client_secret: clientSecret,
        })
      ).body.error,
    ).toBe('unsupported_grant_type');

    // Open registration is rate limited per network address.
    let answer = await anonymous.post<Body>('/oauth/register', { redirect_uris: [REDIRECT_URI] });
    for (let i = 0; i < 70 && answer.status === 201; i++) {
      answer = await anonymous.post<Body>('/oauth/register', { redirect_uris: [REDIRECT_URI] });
    }
    expect(answer.status).toBe(429);
    expect(answer.body.error).toBe('rate_limited');
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe.each(DATABASES)('agent sign-in: grants, scopes and redirects on %s', (database) => {
  let server: TestServer;
  let baseUrl: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    baseUrl = server.server.services.config.baseUrl;
  });
  afterAll(async () => {
    await server.stop();
  });

  /** A public client's tokens through the consent page, with the scopes and world the user ticks. */
  async function signIn(browser: SignedInBrowser, scopes: string[], expectedStatus = 200) {
    const registered = await client(baseUrl).post<Body>('/oauth/register', {
      client_name: 'Agent under test',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
    });
    expect(registered.status, registered.text).toBe(201);
    const clientId = registered.body.client_id as string;
    const { verifier, challenge } = pkcePair();
    const url = `${baseUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: scopes.join(' '),
    }).toString()}`;
    const back = await consent(browser, url, { scopes, mode: 'test', decision: 'allow' });
    const code = back.searchParams.get('code') ?? '';
    const exchange = () =>
      tokenRequest(baseUrl, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: clientId,
      });
    const tokens = await exchange();
    expect(tokens.status, tokens.text).toBe(expectedStatus);
    return {
      clientId,
      exchange,
      tokens,
      access: tokens.body.access_token as string,
      refresh: tokens.body.refresh_token as string,
    };
  }

  const refresh = (clientId: string, token: string, scope?: string) =>
    tokenRequest(baseUrl, {
      grant_type: 'refresh_token',
      refresh_token: token,
      client_id: clientId,
      ...(scope ? { scope } : {}),
    });

  it("agents' sign-ins count against max_api_keys; their access tokens and refreshes do not add to it", async () => {
    // Free: 5 lasting keys and sign-ins together; a new account holds its 2 admin keys.
    const account = await server.createAccount({ plan: 'free' });
    const browser = await signedInOwner(server, account.account_id);
    const grants = [];
    for (let i = 0; i < 3; i++) grants.push(await signIn(browser, ['intakes:read']));
    const [first] = grants;
    if (!first) throw new Error('no sign-in');

    // At the cap: a fourth sign-in is refused when its code is exchanged, and so is a lasting key.
    const refused = await signIn(browser, ['intakes:read'], 400);
    expect(refused.tokens.body.error).toBe('invalid_grant');
    expect(String(refused.tokens.body.error_description)).toContain(
      'The Free plan allows 5 API keys and agent sign-ins (live and test together), and 5 exist',
    );
    const admin = client(baseUrl, account.live_key);
    const key = await admin.post('/v1/keys', { name: 'one more', mode: 'live', scopes: ['intakes:read'] });
    expectError(key, 402, 'plan_required');

    // A refresh continues a sign-in: it works at the cap, and the access tokens never count apart.
    const rotated = await refresh(first.clientId, first.refresh);
    expect(rotated.status, rotated.text).toBe(200);
    expect((await client(baseUrl, rotated.body.access_token as string).get('/v1/intakes')).status).toBe(200);

    // Revoking a sign-in frees its place.
    const revoked = await client(baseUrl).call('POST', '/oauth/revoke', {
      rawBody: new URLSearchParams({
        token: rotated.body.refresh_token as string,
        client_id: first.clientId,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(revoked.status).toBe(200);
    const again = await signIn(browser, ['intakes:read']);
    expect((await client(baseUrl, again.access).get('/v1/intakes')).status).toBe(200);
  });

  it('a reused (already rotated) refresh token revokes every token of its grant', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const grant = await signIn(browser, ['intakes:read']);
    const rotated = await refresh(grant.clientId, grant.refresh);
    expect(rotated.status, rotated.text).toBe(200);
    const current = client(baseUrl, rotated.body.access_token as string);
    expect((await current.get('/v1/intakes')).status).toBe(200);

    // The first refresh token presented again: someone kept a copy. The whole grant ends.
    const reused = await refresh(grant.clientId, grant.refresh);
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    expect(String(reused.body.error_description)).toContain('already used');
    expectError(await current.get('/v1/intakes'), 401, 'unauthorized');
    const next = await refresh(grant.clientId, rotated.body.refresh_token as string);
    expect(next.body.error).toBe('invalid_grant');

    // Another grant of the same user and client is not touched.
    const other = await signIn(browser, ['intakes:read']);
    expect((await client(baseUrl, other.access).get('/v1/intakes')).status).toBe(200);
  });

  it('a replayed authorization code revokes the tokens issued from it', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const grant = await signIn(browser, ['intakes:read', 'intakes:write']);
    const agent = client(baseUrl, grant.access);
    expect((await agent.get('/v1/intakes')).status).toBe(200);

    const replay = await grant.exchange();
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expectError(await agent.get('/v1/intakes'), 401, 'unauthorized');
    expect((await refresh(grant.clientId, grant.refresh)).body.error).toBe('invalid_grant');
  });

  it('an admin grant narrows at refresh: a narrower scope gets a narrower token', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const grant = await signIn(browser, ['admin']);
    expect((await client(baseUrl, grant.access).get('/v1/webhooks')).status).toBe(200);

    const narrowed = await refresh(grant.clientId, grant.refresh, 'intakes:read');
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(narrowed.body.scope).toBe('intakes:read');
    const reader = client(baseUrl, narrowed.body.access_token as string);
    expect((await reader.get('/v1/intakes')).status).toBe(200);
    expectError(await reader.get('/v1/webhooks'), 403, 'forbidden');
    // Narrowed once, never widened again.
    const widened = await refresh(grant.clientId, narrowed.body.refresh_token as string, 'intakes:write');
    expect(widened.body.error).toBe('invalid_scope');
  });

  it('registers redirect URIs per RFC 8252: https, loopback http, reverse-domain private-use schemes', async () => {
    const register = (uri: string) =>
      client(baseUrl).post<Body>('/oauth/register', {
        redirect_uris: [uri],
        token_endpoint_auth_method: 'none',
      });
    for (const good of ['https://agent.example/cb', 'http://127.0.0.1:7777/cb', 'com.example.agent:/oauth']) {
      const answer = await register(good);
      expect(answer.status, `${good}: ${answer.text}`).toBe(201);
    }
    for (const bad of ['myagent://cb', 'cursor://oauth/cb', 'file:///tmp/cb', 'http://agent.example/cb']) {
      const answer = await register(bad);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.error, bad).toBe('invalid_redirect_uri');
    }
  });

  it('asks for least privilege: the 401 names the agent scopes, metadata hides admin, pages tick test and least', async () => {
    const unauthorized = await client(baseUrl).post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(unauthorized.headers.get('www-authenticate')).toContain('scope="intakes:read intakes:write"');
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-authorization-server',
    ]) {
      const metadata = await client(baseUrl).get<{ scopes_supported: string[] }>(path);
      expect(metadata.body.scopes_supported, path).not.toContain('admin');
      expect(metadata.body.scopes_supported, path).toEqual(
        expect.arrayContaining(['intakes:read', 'intakes:write']),
      );
    }

    // A client that asks for everything: the page ticks only the everyday scopes, and test data.
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const registered = await client(baseUrl).post<Body>('/oauth/register', {
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
    });
    const page = await browser.get(
      `${baseUrl}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: registered.body.client_id as string,
        redirect_uri: REDIRECT_URI,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        scope: 'admin intakes:read intakes:write secrets:read',
      }).toString()}`,
    );
    const html = await page.text();
    const ticked = (name: string, value: string) =>
      new RegExp(`name="${name}"\\s+value="${value}"\\s+checked`).test(html);
    expect(ticked('scope', 'intakes:read')).toBe(true);
    expect(ticked('scope', 'intakes:write')).toBe(true);
    expect(ticked('scope', 'admin')).toBe(false);
    expect(ticked('scope', 'secrets:read')).toBe(false);
    expect(ticked('mode', 'test')).toBe(true);
    expect(ticked('mode', 'live')).toBe(false);
  });
});

describe.each(DATABASES)('agent sign-in: device authorization (RFC 8628) on %s', (database) => {
  let server: TestServer;
  let baseUrl: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    baseUrl = server.server.services.config.baseUrl;
  });
  afterAll(async () => {
    await server.stop();
  });

  it('`cli login` gets a key once a signed-in user approves its code, and stores it 0600', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const browser = await signedInOwner(server, account.account_id);
    const credentials = join(server.dataDir, 'agent-home', 'intake', 'credentials.json');
    const child = spawn(process.execPath, intakeCommand('login', '--scopes', 'intakes:read'), {
      env: childEnv({ BASE_URL: baseUrl, INTAKE_CREDENTIALS_FILE: credentials, LOG_LEVEL: 'silent' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const userCode = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /shows the code ([B-Z]{4}-[B-Z]{4})/.exec(stdout);
        if (match?.[1]) resolve(match[1]);
      });
      child.on('close', (code) => reject(new Error(`login exited ${code}: ${stderr}`)));
    });
    expect(stdout).toContain(
      `${server.server.services.config.appUrl}/dashboard/device?user_code=${userCode}`,
    );

    const page = await browser.get(`${baseUrl}/dashboard/device?user_code=${userCode.toLowerCase()}`);
    const text = await page.text();
    expect(page.status, text).toBe(200);
    expect(text).toContain(userCode);
    expect(text).toMatch(/value="intakes:read"\s+checked/);
    const approved = await browser.postForm(`${baseUrl}/dashboard/device`, {
      _csrf: hiddenField(text, '_csrf'),
      user_code: hiddenField(text, 'user_code'),
      scope: ['intakes:read', 'intakes:write'],
      mode: 'live',
      decision: 'approve',
    });
    expect(approved.status).toBe(200);
    expect(await approved.text()).toContain('Device connected');

    expect(await exited, stderr).toBe(0);
    expect(stdout).toContain('Signed in');
    expect((await stat(credentials)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(credentials, 'utf8')) as Record<
      string,
      { api_key: string; scopes: string[] }
    >;
    const key = stored[baseUrl]?.api_key ?? '';
    expect(key).toMatch(/^svc_live_/);
    expect(stored[baseUrl]?.scopes).toEqual(['intakes:read', 'intakes:write']);
    // The secret is in the file only, never on the terminal.
    expect(stdout).not.toContain(key);
    const agent = client(baseUrl, key);
    expect((await agent.get('/v1/intakes')).status).toBe(200);
    expectError(await agent.get('/v1/keys'), 403, 'forbidden');

    // The stdio MCP server started without INTAKE_API_KEY uses the stored key.
    const mcp = new McpClient({ name: 'agent', version: '1.0.0' });
    await mcp.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: intakeCommand('mcp'),
        env: Object.fromEntries(
          Object.entries(
            childEnv({
              INTAKE_API_KEY: '',
              BASE_URL: baseUrl,
              INTAKE_CREDENTIALS_FILE: credentials,
              LOG_LEVEL: 'silent',
            }),
          ).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        stderr: 'pipe',
      }),
    );
    const listed = await mcp.callTool({ name: 'list_intakes', arguments: {} });
    expect(listed.isError ?? false).toBe(false);
    await mcp.close();

    const audit = await client(baseUrl, account.live_key).get<{ entries: Body[] }>('/v1/audit?limit=20');
    expect(audit.body.entries.find((entry) => entry.action === 'oauth.device_key_issued')?.actor).toEqual({
      type: 'user',
      id: browser.userId,
    });
  }, 60_000);

  it("the CLI's poller keeps going through slow_down and stops on access_denied", async () => {
    const account = await server.createAccount({ plan: 'free' });
    const browser = await signedInOwner(server, account.account_id);
    const said: string[] = [];
    let denied: Promise<unknown> | undefined;
    let polls = 0;
    const login = deviceLogin({
      baseUrl,
      clientId: 'intake-cli',
      scopes: ['intakes:read'],
      say: (line) => said.push(line),
      // Far faster than the 5 seconds asked for: the service answers slow_down until the user decides.
      sleep: async () => {
        polls++;
        await new Promise((resolve) => setTimeout(resolve, 20));
        const code = /shows the code ([B-Z-]+)/.exec(said.join('\n'))?.[1];
        if (code && polls === 3) {
          denied = (async () => {
            const page = await (await browser.get(`${baseUrl}/dashboard/device?user_code=${code}`)).text();
            await browser.postForm(`${baseUrl}/dashboard/device`, {
              _csrf: hiddenField(page, '_csrf'),
              user_code: code,
              decision: 'deny',
            });
          })();
          await denied;
        }
      },
    });
    await expect(login).rejects.toThrow('denied');
    // Two polls answered (authorization_pending, then slow_down) before the one that learned of the denial.
    expect(polls).toBe(3);
  });

  it('answers polls with authorization_pending, slow_down, access_denied, expired_token', async () => {
    const account = await server.createAccount({ plan: 'free' });
    const browser = await signedInOwner(server, account.account_id);
    const start = async () => {
      const started = await client(baseUrl).call<Body>('POST', '/oauth/device_authorization', {
        rawBody: 'client_id=intake-cli&scope=intakes%3Aread',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(started.status, started.text).toBe(200);
      expect(started.body.interval).toBe(5);
      return started.body as { device_code: string; user_code: string };
    };
    const poll = async (deviceCode: string) =>
      (
        await tokenRequest(baseUrl, {
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: deviceCode,
          client_id: 'intake-cli',
        })
      ).body.error;

    const denied = await start();
    expect(await poll(denied.device_code)).toBe('authorization_pending');
    expect(await poll(denied.device_code)).toBe('slow_down');
    const page = await (
      await browser.get(`${baseUrl}/dashboard/device?user_code=${denied.user_code}`)
    ).text();
    const answer = await browser.postForm(`${baseUrl}/dashboard/device`, {
      _csrf: hiddenField(page, '_csrf'),
      user_code: denied.user_code,
      decision: 'deny',
    });
    expect(await answer.text()).toContain('denied');
    expect(await poll(denied.device_code)).toBe('access_denied');

    const expiring = await start();
    await server.server.services.db.kysely
      .updateTable('device_authorizations')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('user_code', '=', expiring.user_code.replace('-', ''))
      .execute();
    expect(await poll(expiring.device_code)).toBe('expired_token');
    expect((await browser.get(`${baseUrl}/dashboard/device?user_code=${expiring.user_code}`)).status).toBe(
      404,
    );

    expect(await poll('odc_unknown')).toBe('invalid_grant');
    const unknownClient = await client(baseUrl).call<Body>('POST', '/oauth/device_authorization', {
      rawBody: 'client_id=someone-else',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(unknownClient.status).toBe(401);
    expect(unknownClient.body.error).toBe('invalid_client');
  });
});
