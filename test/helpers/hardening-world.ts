import { expect } from 'vitest';
import { client, type Client } from './http.js';
import { png } from './images.js';
import type { TestServer } from './server.js';

/**
 * One account with one of everything the API serves (an intake with a submitted file, a template, a
 * webhook endpoint, a spare key), so the hardening suites can aim at real ids as well as made-up ones.
 */

export const WORLD_ITEMS = [
  { key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png', 'svg'] } },
  { key: 'about', label: 'About', type: 'longtext', constraints: { max_chars: 200 } },
  {
    key: 'brand',
    label: 'Brand',
    type: 'structured',
    schema: { type: 'object', required: ['company'], properties: { company: { type: 'string' } } },
  },
  { key: 'password', label: 'Password', type: 'secret', required: false },
];

export interface HardeningWorld {
  accountId: string;
  liveKey: string;
  testKey: string;
  api: Client;
  testApi: Client;
  /** The client an operation wants: test helpers work with the test key only. */
  apiFor(path: string): Client;
  intakeId: string;
  testIntakeId: string;
  templateId: string;
  webhookId: string;
  spareKeyId: string;
  fileId: string;
  /** The real id for a path parameter, chosen by the collection the path names. */
  idFor(path: string, param: string): string;
}

export async function createIntake(api: Client, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await api.post<{ intake_id: string }>('/v1/intakes', {
    project_name: 'Hardening',
    client: { email: 'client@example.com', name: 'Client' },
    items: WORLD_ITEMS,
    ...extra,
  });
  expect(created.status, created.text).toBe(201);
  return created.body.intake_id;
}

export async function uploadPng(baseUrl: string, intakeId: string, key = 'logo'): Promise<string> {
  const response = await fetch(`${baseUrl}/portal/api/${intakeId}/items/${key}/files`, {
    method: 'POST',
    headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
    body: await png(64, 64),
  });
  const body = (await response.json()) as { file_id: string };
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body.file_id;
}

export async function createWorld(
  server: TestServer,
  options: { rateLimitPerHour?: number } = {},
): Promise<HardeningWorld> {
  const account = await server.createAccount({
    plan: 'agency',
    rateLimitPerHour: options.rateLimitPerHour ?? 1_000_000,
  });
  const api = client(server.url, account.live_key);
  const testApi = client(server.url, account.test_key);
  const intakeId = await createIntake(api);
  const testIntakeId = await createIntake(testApi);
  const fileId = await uploadPng(server.url, intakeId);
  const template = await api.post<{ id: string }>('/v1/templates', { name: 'T', items: WORLD_ITEMS });
  expect(template.status, template.text).toBe(201);
  const webhook = await api.post<{ id: string }>('/v1/webhooks', {
    url: 'http://127.0.0.1:9/hook',
    events: ['item.submitted'],
  });
  expect(webhook.status, webhook.text).toBe(201);
  const spare = await api.post<{ id: string }>('/v1/keys', { name: 'spare', scopes: ['intakes:read'] });
  expect(spare.status, spare.text).toBe(201);

  const byCollection: Record<string, string> = {
    intakes: intakeId,
    templates: template.body.id,
    webhooks: webhook.body.id,
    keys: spare.body.id,
    files: fileId,
  };
  return {
    accountId: account.account_id,
    liveKey: account.live_key,
    testKey: account.test_key,
    api,
    testApi,
    apiFor: (path) => (path.startsWith('/v1/test_helpers') ? testApi : api),
    intakeId,
    testIntakeId,
    templateId: template.body.id,
    webhookId: webhook.body.id,
    spareKeyId: spare.body.id,
    fileId,
    idFor(path, param) {
      if (path.startsWith('/v1/test_helpers/intakes/')) return testIntakeId;
      if (param === 'intake_id') return intakeId;
      if (param === 'key') return 'about';
      if (param === 'file_id') return fileId;
      // /v1/<collection>/{id}…: the collection right before the parameter names the resource.
      const segments = path.split('/');
      const at = segments.indexOf(`{${param}}`);
      const collection = at > 0 ? (segments[at - 1] ?? '') : '';
      return byCollection[collection] ?? 'unknown';
    },
  };
}
