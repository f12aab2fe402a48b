import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { validate } from '@readme/openapi-parser';
import { PLANS } from '../src/domain/plans.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describe.each(DATABASES)('foundation on %s', (database) => {
  let server: TestServer;
  let anonymous: Client;
  let live: Client;
  let test: Client;
  let liveKey: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    anonymous = client(server.url);
    const account = await server.createAccount({ plan: 'agency' });
    liveKey = account.live_key;
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
  });
  afterAll(async () => server.stop());

  describe('public endpoints', () => {
    it('answers liveness and readiness', async () => {
      const health = await anonymous.get('/healthz');
      expect(health.status).toBe(200);
      expect(health.body.status).toBe('ok');
      const ready = await anonymous.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({
        status: 'ok',
        checks: { database: 'ok', storage: 'ok', email: 'ok', rate_limits: 'ok' },
      });
    });

    it('publishes pricing from the plan table the limits come from', async () => {
      const pricing = await anonymous.get<{ plans: { id: string; rate_limit_per_hour: number }[] }>(
        '/pricing.json',
      );
      expect(pricing.status).toBe(200);
      expect(pricing.body.plans.map((p) => [p.id, p.rate_limit_per_hour])).toEqual([
        ['free', 60],
        ['solo', 600],
        ['agency', 3000],
      ]);
      expect(pricing.body.plans).toEqual(Object.values(PLANS));
    });

    it('serves an OpenAPI 3.1 document that an independent parser accepts', async () => {
      const doc = await anonymous.get<Record<string, unknown>>('/v1/openapi.json');
      expect(doc.status).toBe(200);
      expect(doc.body.openapi).toBe('3.1.0');
      const result = await validate(structuredClone(doc.body) as never);
      expect(result.valid, JSON.stringify(result.valid ? [] : result.errors)).toBe(true);
      const paths = doc.body.paths as Record<string, Record<string, Record<string, unknown>>>;
      const createKey = paths['/v1/keys']?.post;
      expect(createKey?.['x-required-scope']).toBe('admin');
      expect(createKey?.security).toEqual([{ bearerAuth: [] }]);
      expect(Object.keys(createKey?.responses as object)).toEqual(
        expect.arrayContaining(['201', '400', '401', '403', '429']),
      );
      expect(paths['/v1/auth/keys']?.get).toBeDefined();
      const audit = paths['/v1/audit']?.get?.parameters as { name: string }[];
      expect(audit.map((p) => p.name)).toEqual(expect.arrayContaining(['limit', 'starting_after']));
      expect(paths['/healthz']?.get?.security).toBeUndefined();
    });
  });

  it('guards the HEAD twin of every secured GET route like the GET itself', async () => {
    for (const path of ['/v1/account', '/v1/keys', '/v1/audit', '/v1/intakes']) {
      const answer = await fetch(server.url + path, { method: 'HEAD' });
      expect(answer.status, path).toBe(401);
    }
    expect(
      (
        await fetch(server.url + '/v1/account', {
          method: 'HEAD',
          headers: { authorization: `Bearer ${liveKey}` },
        })
      ).status,
    ).toBe(200);
  });

  describe('errors', () => {
    it('answers unknown routes with the JSON error envelope', async () => {
      expectError(await anonymous.get('/v1/nothing-here'), 404, 'not_found');
    });

    it('rejects malformed JSON, wrong types and unknown fields with 400 naming the field', async () => {
      expectError(
        await live.call('PATCH', '/v1/account', {
          rawBody: '{"name": ',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_request',
      );
      const wrongType = await live.patch('/v1/account', { name: 42 });
      expectError(wrongType, 400, 'invalid_request');
      expect(wrongType.body.message).toContain('body.name');
      const unknown = await live.patch('/v1/account', { nmae: 'typo' });
      expectError(unknown, 400, 'invalid_request');
      expect(unknown.body.message).toContain('nmae');
    });

    it('refuses other content types with 415 and oversized bodies with 413', async () => {
      expectError(
        await live.call('PATCH', '/v1/account', {
          rawBody: 'name=x',
          headers: { 'content-type': 'text/plain' },
        }),
        415,
        'unsupported_media_type',
      );
      const huge = JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) });
      expectError(
        await live.call('PATCH', '/v1/account', {
          rawBody: huge,
          headers: { 'content-type': 'application/json' },
        }),
        413,
        'payload_too_large',
      );
    });
  });

  describe('API keys', () => {
    it('secures every key route', async () => {
      const reader = await live.post<{ key: string }>('/v1/keys', {
        name: 'reader',
        mode: 'live',
        scopes: ['intakes:read'],
      });
      const readerClient = client(server.url, reader.body.key);
      for (const base of ['/v1/keys', '/v1/auth/keys']) {
        await expectSecured(anonymous, readerClient, 'GET', base);
        await expectSecured(anonymous, readerClient, 'POST', base, { name: 'x', scopes: ['intakes:read'] });
        await expectSecured(anonymous, readerClient, 'DELETE', `${base}/key_whatever`);
      }
    });

    it('shows the secret once, stores only a hash, and lists a prefix', async () => {
      const created = await live.post<Record<string, string>>('/v1/keys', {
        name: 'CI',
        mode: 'live',
        scopes: ['intakes:read', 'intakes:write'],
      });
      expect(created.status).toBe(201);
      expect(created.body.key).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
      // 43 base62 characters: 43 × log2(62) ≈ 256 bits.
      expect(43 * Math.log2(62)).toBeGreaterThanOrEqual(192);
      expect(created.body.key?.startsWith(created.body.prefix ?? '-')).toBe(true);
      const listed = await live.get<{ keys: Record<string, unknown>[] }>('/v1/keys');
      expect(listed.text).not.toContain(created.body.key);
      const mine = listed.body.keys.find((k) => k.id === created.body.id);
      expect(mine).toMatchObject({ name: 'CI', mode: 'live', scopes: ['intakes:read', 'intakes:write'] });
      expect(mine).not.toHaveProperty('key');
      const rows = await server.server.services.db.kysely.selectFrom('api_keys').selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(created.body.key);
    });

    it('serves the same keys on /v1/auth/keys', async () => {
      const created = await live.post<{ id: string }>('/v1/auth/keys', {
        name: 'alias',
        scopes: ['intakes:read'],
      });
      expect(created.status).toBe(201);
      const listed = await live.get<{ keys: { id: string }[] }>('/v1/keys');
      expect(listed.body.keys.map((k) => k.id)).toContain(created.body.id);
      expect((await live.delete(`/v1/auth/keys/${created.body.id}`)).status).toBe(204);
    });

    it('refuses a key the very next request after it is revoked', async () => {
      const created = await live.post<{ id: string; key: string }>('/v1/keys', {
        name: 'temp',
        scopes: ['admin'],
      });
      const temp = client(server.url, created.body.key);
      expect((await temp.get('/v1/account')).status).toBe(200);
      expect((await live.delete(`/v1/keys/${created.body.id}`)).status).toBe(204);
      expectError(await temp.get('/v1/account'), 401, 'unauthorized');
      expectError(await live.delete(`/v1/keys/${created.body.id}`), 404, 'not_found');
    });

    it('grants at most the creating key’s scopes', async () => {
      const writer = await live.post<{ key: string }>('/v1/keys', {
        name: 'writer',
        scopes: ['admin'],
      });
      const admin2 = client(server.url, writer.body.key);
      const narrow = await admin2.post<{ key: string }>('/v1/keys', {
        name: 'narrow',
        scopes: ['intakes:read'],
      });
      expect(narrow.status).toBe(201);
      const narrowClient = client(server.url, narrow.body.key);
      expectError(await narrowClient.post('/v1/keys', { name: 'up', scopes: ['admin'] }), 403, 'forbidden');
      expectError(await narrowClient.get('/v1/audit'), 403, 'forbidden');
      expect((await narrowClient.get('/v1/account')).status).toBe(200);
    });

    it('keeps test keys in the test world', async () => {
      expectError(
        await test.post('/v1/keys', { name: 'escalate', mode: 'live', scopes: ['admin'] }),
        403,
        'forbidden',
      );
      const testKey = await test.post<{ id: string; mode: string }>('/v1/keys', {
        name: 't',
        scopes: ['intakes:read'],
      });
      expect(testKey.body.mode).toBe('test');
      const listed = await test.get<{ keys: { mode: string }[] }>('/v1/keys');
      expect(listed.body.keys.length).toBeGreaterThan(0);
      expect(listed.body.keys.every((k) => k.mode === 'test')).toBe(true);
      const liveKeys = await live.get<{ keys: { id: string }[] }>('/v1/keys');
      const liveOnly = liveKeys.body.keys.map((k) => k.id);
      expect(liveOnly).toContain(testKey.body.id);
    });

    it('answers another account’s key with 404, never 403', async () => {
      const other = await server.createAccount();
      const otherClient = client(server.url, other.live_key);
      const mine = await live.post<{ id: string }>('/v1/keys', { name: 'mine', scopes: ['intakes:read'] });
      expectError(await otherClient.delete(`/v1/keys/${mine.body.id}`), 404, 'not_found');
      const theirs = await otherClient.get<{ keys: { id: string }[] }>('/v1/keys');
      expect(theirs.body.keys.map((k) => k.id)).not.toContain(mine.body.id);
    });
  });

  describe('account, usage and audit', () => {
    it('reads and updates the account', async () => {
      const account = await live.get('/v1/account');
      expect(account.body).toMatchObject({
        plan: 'agency',
        default_language: 'en',
        rate_limit_per_hour: 3000,
      });
      expect(account.body.id).toMatch(/^acct_/);
      const patched = await live.patch('/v1/account', { name: 'Studio Nord', default_language: 'fr-ca' });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ name: 'Studio Nord', default_language: 'fr-CA' });
      const bad = await live.patch('/v1/account', { default_language: 'not a language!' });
      expectError(bad, 400, 'invalid_request');
      expect(bad.body.message).toContain('default_language');
      expect((await live.patch('/v1/account', { name: null })).body.name).toBe('Studio Nord');
    });

    it('reports usage against the plan quotas', async () => {
      const usage = await live.get('/v1/usage');
      expect(usage.status).toBe(200);
      expect(usage.body).toEqual({
        period: new Date().toISOString().slice(0, 7),
        intakes: { used: 0, limit: PLANS.agency.quotas.intakes_per_month },
        storage_bytes: { used: 0, limit: PLANS.agency.quotas.storage_bytes },
        sms_messages: { used: 0, limit: PLANS.agency.quotas.sms_per_month },
        seats: { used: 1, limit: PLANS.agency.quotas.seats },
        rate_limit_per_hour: PLANS.agency.rate_limit_per_hour,
      });
    });

    it('logs every mutating call, newest first, with cursor pagination', async () => {
      const fresh = await server.createAccount();
      const admin = client(server.url, fresh.live_key);
      const first = await admin.post<{ id: string }>('/v1/keys', { name: 'a', scopes: ['intakes:read'] });
      const second = await admin.patch('/v1/account', { name: 'Renamed' });
      const third = await admin.delete(`/v1/keys/${first.body.id}`);
      await admin.patch('/v1/account', { bogus: true }); // failed calls are not logged
      const page = await admin.get<{ entries: Record<string, unknown>[]; has_more: boolean }>('/v1/audit');
      expect(page.body.entries.map((e) => e.action)).toEqual([
        'api_key.revoke',
        'account.update',
        'api_key.create',
      ]);
      expect(page.body.has_more).toBe(false);
      const [revoke, update, create] = page.body.entries;
      expect(revoke).toMatchObject({ resource_type: 'api_key', resource_id: first.body.id });
      expect(revoke?.request_id).toBe(third.headers.get('x-request-id'));
      expect(update).toMatchObject({
        resource_id: fresh.account_id,
        request_id: second.headers.get('x-request-id'),
      });
      expect(create?.actor).toMatchObject({ type: 'api_key' });
      expect((create?.actor as { id: string }).id).toMatch(/^key_/);

      const p1 = await admin.get<{ entries: { id: string }[]; has_more: boolean }>('/v1/audit?limit=2');
      expect(p1.body.entries).toHaveLength(2);
      expect(p1.body.has_more).toBe(true);
      const p2 = await admin.get<{ entries: { id: string }[]; has_more: boolean }>(
        `/v1/audit?limit=2&starting_after=${p1.body.entries[1]?.id}`,
      );
      expect(p2.body.entries.map((e) => e.id)).toEqual([page.body.entries[2]?.id]);
      expect(p2.body.has_more).toBe(false);
      expectError(await admin.get('/v1/audit?limit=101'), 400, 'invalid_request');
      expectError(await admin.get('/v1/audit?starting_after=aud_missing'), 400, 'invalid_request');

      const testSide = client(server.url, fresh.test_key);
      expect((await testSide.get<{ entries: unknown[] }>('/v1/audit')).body.entries).toEqual([]);
    });
  });

  describe('rate limits', () => {
    it('rejects the request over the rolling limit with 429 and Retry-After', async () => {
      const small = await server.createAccount({ plan: 'free', rateLimitPerHour: 3 });
      const limited = client(server.url, small.live_key);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await limited.get('/v1/account'));
      expect(answers.slice(0, 3).map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers.map((a) => a.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
      expect(answers[0]?.headers.get('x-ratelimit-limit')).toBe('3');
      const reset = Number(answers[0]?.headers.get('x-ratelimit-reset'));
      expect(reset).toBeGreaterThan(Date.now() / 1000 + 3590);
      const rejected = answers[3];
      if (!rejected) throw new Error('no fourth answer');
      expectError(rejected, 429, 'rate_limited');
      const retryAfter = Number(rejected.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(3590);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      expect(rejected.body.message).toContain('3 requests per hour');
      expect(rejected.body.message).toContain(`${retryAfter} seconds`);
      // Test keys have their own bucket.
      expect((await client(server.url, small.test_key).get('/v1/account')).status).toBe(200);
    });

    it('names the plan in the 429 message', async () => {
      const free = await server.createAccount({ plan: 'free' });
      const c = client(server.url, free.live_key);
      let last;
      for (let i = 0; i <= PLANS.free.rate_limit_per_hour; i++) last = await c.get('/v1/usage');
      if (!last) throw new Error('no answer');
      expectError(last, 429, 'rate_limited');
      expect(last.body.message).toContain('60 requests per hour');
      expect(last.body.message).toContain('Free plan');
    });
  });

  it('answers the live key’s account on both worlds', async () => {
    expect(liveKey).toMatch(/^svc_live_/);
    const fromTest = await test.get('/v1/account');
    expect(fromTest.body.livemode).toBe(false);
    expect((await live.get('/v1/account')).body.livemode).toBe(true);
  });
});

describe('readiness when a dependency is down', () => {
  it('answers 503 naming the email transport and the rate-limit store that cannot be reached', async () => {
    // Port 1 on loopback: nothing listens there, so connections are refused at once.
    const server = await startTestServer('sqlite', {
      SMTP_URL: 'smtp://127.0.0.1:1',
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    try {
      const ready = await client(server.url).get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        status: 'unavailable',
        checks: { database: 'ok', storage: 'ok', email: 'down', rate_limits: 'down' },
      });
      expect((await client(server.url).get('/healthz')).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
