import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { TIMED_OUT_MESSAGE } from '../src/lib/schema-budget.js';

/**
 * The time budget for checking structured values (src/lib/schema-budget.ts). The server runs with a
 * budget of 1 ms, and the costly value below takes seconds to check (about 12 s on the event loop,
 * which is what the server did before the budget): it cannot finish within the budget, so the test
 * does not depend on timing.
 */

/** 421 subschemas once expanded, inside every limit at definition: 20 × 20 `format` branches. */
const FORMATS = ['email', 'uri', 'date-time', 'ipv6', 'hostname'];
const COSTLY_SCHEMA = {
  type: 'array',
  items: {
    anyOf: Array.from({ length: 20 }, () => ({
      anyOf: Array.from({ length: 20 }, (_, j) => ({ type: 'string', format: FORMATS[j % FORMATS.length] })),
    })),
  },
};
/** 10,000 value nodes, none matching any branch: every branch is tried for each. */
const COSTLY_VALUE = Array.from({ length: 9_999 }, () => 'y@');

describe.each(DATABASES)('validation time budget on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database, { VALIDATION_TIME_BUDGET_MS: '1' });
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    portal = client(server.url);
  });
  afterAll(async () => server.stop());

  const counts = () => ({ ...server.server.services.schemaChecks.counts });

  async function intakeWith(schema: Record<string, unknown>, value: unknown): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Budget',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'data', label: 'Data', type: 'structured', schema }],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    // Autosave measures the value (depth, nodes) but leaves the schema to submission.
    const saved = await portal.call('PUT', `/portal/api/${id}/items/data`, { body: { value } });
    expect(saved.status, saved.text).toBe(200);
    return id;
  }

  it('refuses a value whose check passes the budget with 422, and /healthz answers meanwhile', async () => {
    const id = await intakeWith(COSTLY_SCHEMA, COSTLY_VALUE);
    const before = counts();
    let done = false;
    const submitting = portal.post(`/portal/api/${id}/items/data/submit`).finally(() => {
      done = true;
    });
    const healthWhileChecking: number[] = [];
    while (!done) {
      const health = await fetch(`${server.url}/healthz`);
      if (!done) healthWhileChecking.push(health.status);
    }
    const refused = await submitting;
    expectError(refused, 422, 'unprocessable');
    expect(refused.body.message).toContain(TIMED_OUT_MESSAGE);
    expect(healthWhileChecking.length).toBeGreaterThan(0);
    expect(healthWhileChecking.every((status) => status === 200)).toBe(true);
    expect(counts().worker).toBe(before.worker + 1);
    expect(counts().overBudget).toBe(before.overBudget + 1);
  });

  it('the page’s one send leaves the value unsent with the same reason', async () => {
    const id = await intakeWith(COSTLY_SCHEMA, COSTLY_VALUE);
    const sent = await portal.post<{
      submitted: string[];
      invalid: Array<{ item_key: string; message: string }>;
    }>(`/portal/api/${id}/submit`);
    expect(sent.body.submitted).toEqual([]);
    expect(sent.body.invalid).toHaveLength(1);
    expect(sent.body.invalid[0]?.message).toContain(TIMED_OUT_MESSAGE);
  });

  it('the page’s form (no script) shows the same reason on the item’s card', async () => {
    const id = await intakeWith(COSTLY_SCHEMA, []);
    const posted = await fetch(`${server.url}/portal/${id}/items/data`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ json: JSON.stringify(COSTLY_VALUE), action: 'submit' }).toString(),
      redirect: 'manual',
    });
    expect(posted.status).toBe(422);
    const html = await posted.text();
    expect(html).toContain(TIMED_OUT_MESSAGE.replace("'", '&#39;'));
  });

  it('a schema change counts an answer that cannot be checked in time as lost', async () => {
    // Submitted under a schema that checks it inline (1 subschema × 2,501 nodes); a submitted
    // answer must pass the new schema to be kept, and against it the check takes seconds.
    const id = await intakeWith({ type: 'array' }, COSTLY_VALUE.slice(0, 2_500));
    const submitted = await portal.post(`/portal/api/${id}/items/data/submit`);
    expect(submitted.status, submitted.text).toBe(200);
    const changed = await api.patch(`/v1/intakes/${id}/items/data`, { schema: COSTLY_SCHEMA });
    expectError(changed, 409, 'item_answer_would_be_discarded');
    expect(changed.body.message).toContain(TIMED_OUT_MESSAGE);
  });

  it('checks a cheap value inline, and a normal value passes', async () => {
    const id = await intakeWith(
      {
        type: 'object',
        properties: { street: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
        required: ['street', 'zip'],
      },
      { street: 'Hauptstraße 1', zip: '10115' },
    );
    const before = counts();
    const submitted = await portal.post(`/portal/api/${id}/items/data/submit`);
    expect(submitted.status, submitted.text).toBe(200);
    expect(counts().inline).toBe(before.inline + 1);
    expect(counts().worker).toBe(before.worker);
  });
});
