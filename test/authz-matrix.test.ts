import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../src/domain/scopes.js';
import { DATABASES } from './helpers/env.js';
import { createWorld, type HardeningWorld } from './helpers/hardening-world.js';
import { client } from './helpers/http.js';
import {
  fetchOpenApi,
  fillPath,
  operationName,
  operationsOf,
  type Operation,
} from './helpers/openapi-contract.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * For every secured operation of /v1/openapi.json: no key, malformed keys, a revoked key → 401; a key
 * without the needed scope → 403; another account's key and the other mode's key on this account's
 * ids → 404, changing nothing. Then mass assignment, and a sweep of every readable answer for what
 * must never leak (key hashes, webhook secrets after creation, secret values without secrets:read).
 */

interface Answer {
  status: number;
  body: { error?: string; request_id?: string } | undefined;
  text: string;
}

async function call(
  url: string,
  method: string,
  authorization: string | undefined,
  payload?: unknown,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, {
    method,
    headers,
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  const text = await response.text();
  let body: Answer['body'];
  try {
    body = text ? (JSON.parse(text) as Answer['body']) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text };
}

const MALFORMED = [
  'Bearer not-a-key',
  'Basic c3ZjX2xpdmVfeDp4',
  'Bearer',
  `Bearer svc_live_${'A'.repeat(43)}`,
  `Bearer svc_prod_${'A'.repeat(43)}`,
  `bearer  svc_test_${'z'.repeat(43)} extra`,
  `Bearer ${'svc_live_'.repeat(200)}`,
];

/**
 * Valid bodies for operations that validate their body before looking the resource up, so the
 * cross-tenant cases reach the lookup. An operation missing here may answer 400 instead of 404.
 */
const VALID_BODIES: Record<string, unknown> = {
  'POST /v1/test_helpers/intakes/{id}/simulate': { action: 'view' },
  'POST /v1/intakes/{id}/items': { items: [{ key: 'extra', label: 'Extra', type: 'longtext' }] },
  'POST /v1/intakes/{id}/revision': { item_key: 'about', note: 'Again please' },
  'POST /v1/webhooks/{id}/test': { event: 'item.submitted' },
  'PATCH /v1/intakes/{id}': { project_name: 'Renamed' },
  'PATCH /v1/intakes/{id}/items/{key}': { label: 'Renamed' },
  'POST /v1/intakes/{id}/recipients': { email: 'r@example.com' },
  'PATCH /v1/folders/{id}': { name: 'Renamed' },
  'PATCH /v1/webhooks/{id}': { events: ['item.submitted'] },
};

/** Scope sets that hold everything except what `needed` asks for (admin included in none). */
function tooNarrow(needed: string): string[][] {
  const others = SCOPES.filter((scope) => scope !== 'admin' && scope !== needed);
  return needed === 'admin' ? [others] : [others, []].filter((set) => set.length > 0);
}

describe.each(DATABASES)('authorization matrix on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;
  let other: { live: string; test: string };
  let operations: Operation[];
  let revokedKey: string;
  const narrowKeys = new Map<string, string>();
  const counts = { cases: 0 };

  const urlOf = (op: Operation, values: Record<string, string> = {}) =>
    `${server.url}${fillPath(op.path, {
      ...Object.fromEntries(op.pathParams.map((name) => [name, world.idFor(op.path, name)])),
      ...values,
    })}`;

  async function expectStatus(
    op: Operation,
    authorization: string | undefined,
    status: number,
    code: string,
  ) {
    counts.cases++;
    const answer = await call(urlOf(op), op.method, authorization);
    expect(answer.status, `${operationName(op)} with ${authorization?.slice(0, 40)}: ${answer.text}`).toBe(
      status,
    );
    expect(answer.body?.error).toBe(code);
    expect(answer.body?.request_id).toMatch(/^req_/);
  }

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
    const otherAccount = await server.createAccount({ plan: 'agency', rateLimitPerHour: 1_000_000 });
    other = { live: otherAccount.live_key, test: otherAccount.test_key };
    operations = operationsOf(await fetchOpenApi(server.url)).filter((op) => op.scope);
    const revoked = await world.api.post<{ id: string; key: string }>('/v1/keys', {
      name: 'to revoke',
      scopes: ['admin'],
    });
    expect((await world.api.delete(`/v1/keys/${revoked.body.id}`)).status).toBe(204);
    revokedKey = revoked.body.key;
    for (const scope of SCOPES) {
      for (const scopes of tooNarrow(scope)) {
        const created = await world.api.post<{ key: string }>('/v1/keys', {
          name: `without ${scope}`,
          scopes,
        });
        expect(created.status, created.text).toBe(201);
        narrowKeys.set(`${scope}|${scopes.join(',')}`, created.body.key);
      }
    }
  });
  afterAll(async () => {
    await server?.stop();
    console.info(
      `authz matrix (${database}): ${operations.length} secured operations, ${counts.cases} cases`,
    );
  });

  it('covers every secured operation the document lists', () => {
    expect(operations.length).toBeGreaterThan(30);
    for (const op of operations) expect(op.raw.security, operationName(op)).toBeTruthy();
  });

  it('answers 401 without a key, with malformed keys and with a revoked key', async () => {
    for (const op of operations) {
      await expectStatus(op, undefined, 401, 'unauthorized');
      for (const header of MALFORMED) await expectStatus(op, header, 401, 'unauthorized');
      await expectStatus(op, `Bearer ${revokedKey}`, 401, 'unauthorized');
    }
  });

  it('answers 403 to every key whose scopes fall short of the operation', async () => {
    for (const op of operations) {
      if (!op.scope || op.scope === 'any') continue;
      for (const scopes of tooNarrow(op.scope)) {
        const key = narrowKeys.get(`${op.scope}|${scopes.join(',')}`);
        await expectStatus(op, `Bearer ${key}`, 403, 'forbidden');
      }
    }
  });

  it("answers 404 to another account's keys and to the other mode's key on this account's ids", async () => {
    const withIds = operations.filter((op) => op.pathParams.length > 0);
    expect(withIds.length).toBeGreaterThan(15);
    /** 404; 400 too where the input is checked before the lookup and no valid body is known. */
    const allowedFor = (op: Operation): number[] => {
      const writes = op.method !== 'GET' && op.method !== 'DELETE';
      return VALID_BODIES[operationName(op)] === undefined && writes ? [400, 404] : [404];
    };
    for (const op of withIds) {
      const body = VALID_BODIES[operationName(op)];
      for (const key of [other.live, other.test]) {
        counts.cases++;
        const answer = await call(urlOf(op), op.method, `Bearer ${key}`, body);
        // 403 is right too where the operation's mode check comes first (test helpers with a live key).
        expect(
          [...allowedFor(op), 403],
          `${operationName(op)} with another account's key: ${answer.text}`,
        ).toContain(answer.status);
      }
      if (
        op.path.startsWith('/v1/intakes') ||
        op.path.startsWith('/v1/webhooks') ||
        op.path.startsWith('/v1/keys')
      ) {
        counts.cases++;
        const answer = await call(urlOf(op), op.method, `Bearer ${world.testKey}`, body);
        expect(
          allowedFor(op),
          `${operationName(op)} with the test key on live ids: ${answer.text}`,
        ).toContain(answer.status);
      }
    }
    // The live key on the test world's intake.
    for (const op of withIds.filter((o) => o.path.startsWith('/v1/intakes/{id}'))) {
      counts.cases++;
      const answer = await call(
        urlOf(op, { id: world.testIntakeId }),
        op.method,
        `Bearer ${world.liveKey}`,
        VALID_BODIES[operationName(op)],
      );
      expect(allowedFor(op), `${operationName(op)} with the live key on a test intake`).toContain(
        answer.status,
      );
    }
    // Nothing was changed by any of them: the fixtures are all still there.
    expect((await world.api.get(`/v1/intakes/${world.intakeId}`)).status).toBe(200);
    expect((await world.api.get(`/v1/webhooks`)).text).toContain(world.webhookId);
    expect((await world.api.get(`/v1/keys`)).text).toContain(world.spareKeyId);
    expect((await world.api.get(`/v1/templates/${world.templateId}`)).status).toBe(200);
  });

  it('rejects mass assignment of ownership, mode, status and ids', async () => {
    const smuggled = { account_id: 'acct_other', livemode: false, status: 'completed', id: 'in_chosen' };
    const intake = await world.api.post('/v1/intakes', {
      project_name: 'Mass',
      client: { email: 'c@example.com' },
      items: [{ key: 'a', label: 'A', type: 'longtext' }],
      ...smuggled,
    });
    expect(intake.status).toBe(400);
    for (const field of Object.keys(smuggled)) expect(String(intake.body.message)).toContain(field);

    const account = await world.api.patch('/v1/account', { plan: 'agency', id: 'acct_x', email: 'x@y.z' });
    expect(account.status).toBe(400);
    const key = await world.api.post('/v1/keys', {
      name: 'k',
      scopes: ['admin'],
      account_id: 'acct_x',
      livemode: 0,
    });
    expect(key.status).toBe(400);
    const webhook = await world.api.post('/v1/webhooks', {
      url: 'http://127.0.0.1:9/h',
      events: ['item.submitted'],
      id: 'wh_chosen',
      account_id: 'acct_x',
    });
    expect(webhook.status).toBe(400);
    const template = await world.api.post('/v1/templates', {
      name: 'T',
      items: [{ key: 'a', label: 'A', type: 'longtext' }],
      account_id: 'acct_x',
    });
    expect(template.status).toBe(400);
    // A test key cannot mint a live key; a narrow key cannot mint a broader one.
    const testApi = client(server.url, world.testKey);
    expect((await testApi.post('/v1/keys', { name: 'k', mode: 'live', scopes: ['admin'] })).status).toBe(403);
    const readOnly = client(server.url, narrowKeys.get('admin|intakes:read,intakes:write,secrets:read'));
    expect((await readOnly.post('/v1/keys', { name: 'k', scopes: ['admin'] })).status).toBe(403);
    // The portal cannot set an item's status or another intake's id either.
    const portal = await fetch(`${server.url}/portal/api/${world.intakeId}/items/about`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'hello', status: 'approved', intake_id: world.testIntakeId }),
    });
    expect(portal.status).toBe(400);
  });

  it('never shows a key hash, a webhook secret after creation, or a secret without secrets:read', async () => {
    const secretValue = `hunter2-${Math.random().toString(36).slice(2)}`;
    const saved = await fetch(`${server.url}/portal/api/${world.intakeId}/items/password`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: secretValue }),
    });
    expect(saved.status).toBe(200);
    const submitted = await fetch(`${server.url}/portal/api/${world.intakeId}/items/password/submit`, {
      method: 'POST',
    });
    expect(submitted.status).toBe(200);
    const webhook = await world.api.post<{ id: string; secret: string }>('/v1/webhooks', {
      url: 'http://127.0.0.1:9/leak',
      events: ['item.submitted'],
    });
    expect(webhook.body.secret).toMatch(/^whsec_/);
    const hashes = (
      await server.server.services.db.kysely.selectFrom('api_keys').select('key_hash').execute()
    ).map((row) => row.key_hash);
    expect(hashes.length).toBeGreaterThan(3);

    const reads = operationsOf(await fetchOpenApi(server.url)).filter(
      (op) => op.method === 'GET' && op.path !== '/v1/intakes/{id}/items/{key}/secret',
    );
    const withoutSecrets = `Bearer ${narrowKeys.get('secrets:read|intakes:read,intakes:write')}`;
    let swept = 0;
    for (const op of reads) {
      const url = `${server.url}${fillPath(op.path, {
        ...Object.fromEntries(op.pathParams.map((name) => [name, world.idFor(op.path, name)])),
        key: 'password',
      })}`;
      for (const authorization of [`Bearer ${world.liveKey}`, withoutSecrets]) {
        const answer = await call(url, 'GET', op.scope ? authorization : undefined);
        swept++;
        for (const hash of hashes)
          expect(answer.text, `${operationName(op)} shows a key hash`).not.toContain(hash);
        expect(answer.text, `${operationName(op)} shows a webhook secret`).not.toContain(webhook.body.secret);
        if (authorization === withoutSecrets || !op.scope) {
          expect(answer.text, `${operationName(op)} shows a secret value`).not.toContain(secretValue);
        }
      }
    }
    expect(swept).toBeGreaterThan(20);
    // The key that may read secrets sees it once, then no more.
    const results = await world.api.get(`/v1/intakes/${world.intakeId}/results?include_pending=true`);
    expect(results.text).toContain(secretValue);
    const again = await world.api.get(`/v1/intakes/${world.intakeId}/results?include_pending=true`);
    expect(again.text).not.toContain(secretValue);
    const direct = await world.api.get(`/v1/intakes/${world.intakeId}/items/password/secret`);
    expect(direct.status).toBe(410);
  });
});
