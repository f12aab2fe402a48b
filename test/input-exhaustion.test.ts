import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Event-loop and memory exhaustion through the anonymous portal and a caller's schemas. Every input
 * here is one the backtracking or unbounded code could not finish at all (hours, not seconds), so
 * the tests are deterministic: without the fixes they never return.
 */

/** A value that `^(a+)+$` rejects only after 2^40 steps of backtracking. */
const EVIL = `${'a'.repeat(40)}!`;

/** An `anyOf` chain through `$defs`: 40 bytes a level, and 2^levels branches to try. */
function anyOfChain(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { l0: { type: 'string', pattern: '^x$' } };
  for (let i = 1; i <= levels; i++)
    defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/l${levels}` };
}

/** `{"value": {"a": {"a": … "leaf" …}}}` as text (JSON.stringify itself overflows the stack on it). */
function nestedBody(levels: number): string {
  return `{"value":${'{"a":'.repeat(levels)}"leaf"${'}'.repeat(levels)}}`;
}

describe.each(DATABASES)('input exhaustion on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    portal = client(server.url);
  });
  afterAll(async () => server.stop());

  async function intakeWith(schema: Record<string, unknown>) {
    return api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Schemas',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'details', label: 'Details', type: 'structured', schema }],
    });
  }

  async function submit(id: string, value: unknown) {
    const saved = await portal.call('PUT', `/portal/api/${id}/items/details`, { body: { value } });
    if (saved.status !== 200) return saved;
    return portal.post(`/portal/api/${id}/items/details/submit`);
  }

  it('runs schema patterns on a linear-time engine: ^(a+)+$ against 40 a and ! answers at once', async () => {
    const created = await intakeWith({
      type: 'object',
      properties: { code: { type: 'string', pattern: '^(a+)+$' } },
    });
    expect(created.status, created.text).toBe(201);
    const refused = await submit(created.body.intake_id, { code: EVIL });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('must match pattern');
    expect((await submit(created.body.intake_id, { code: 'aaaa' })).status).toBe(200);
  });

  it('runs propertyNames and patternProperties on it too', async () => {
    const created = await intakeWith({
      type: 'object',
      propertyNames: { pattern: '^(a+)+$' },
      patternProperties: { '^(b+)+$': { type: 'string' } },
    });
    expect(created.status, created.text).toBe(201);
    expectError(await submit(created.body.intake_id, { [EVIL]: 'x' }), 422, 'unprocessable');
  });

  it('refuses patterns RE2 cannot run in linear time, at definition', async () => {
    const refused = await intakeWith({ type: 'string', pattern: '^(a)\\1$' });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('schema');
  });

  it('refuses, at definition, a schema that expands exponentially through $ref (an anyOf chain)', async () => {
    const refused = await intakeWith(anyOfChain(40));
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('expands to more than');
    // A short chain is a normal schema.
    expect((await intakeWith(anyOfChain(3))).status).toBe(201);
  });

  it('refuses uniqueItems over objects without a bound, and wide combinators, at definition', async () => {
    const unique = await intakeWith({ type: 'array', items: { type: 'object' }, uniqueItems: true });
    expectError(unique, 422, 'unprocessable');
    expect(unique.text).toContain('uniqueItems');
    const bounded = { type: 'array', items: { type: 'object' }, uniqueItems: true, maxItems: 100 };
    expect((await intakeWith(bounded)).status).toBe(201);
    const wide = await intakeWith({ anyOf: Array.from({ length: 50 }, (_, i) => ({ const: i })) });
    expectError(wide, 422, 'unprocessable');
  });

  it('refuses a value too large to check before validating it (uniqueItems over 30,000 objects)', async () => {
    const created = await intakeWith({
      type: 'array',
      items: { type: 'object' },
      uniqueItems: true,
      maxItems: 100,
    });
    expect(created.status, created.text).toBe(201);
    const many = Array.from({ length: 30_000 }, (_, i) => ({ n: i }));
    const refused = await submit(created.body.intake_id, many);
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('more than');
  });

  it('answers 422, not 500, for a value nested 6,000 levels deep', async () => {
    const created = await intakeWith({ type: 'object' });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const saved = await portal.call('PUT', `/portal/api/${id}/items/details`, {
      rawBody: nestedBody(6_000),
      headers: { 'content-type': 'application/json' },
    });
    expectError(saved, 422, 'unprocessable');
    expect(saved.text).toContain('nested deeper than');
  });
});
