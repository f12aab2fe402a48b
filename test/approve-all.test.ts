import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Status {
  status: string;
  progress: { submitted: number; total: number; awaiting_review: number };
  items: { key: string; status: string }[];
}
interface ListedIntake {
  id: string;
  awaiting_review: number;
}

const ITEMS = [
  { key: 'about', label: 'About your company', type: 'longtext' },
  { key: 'tagline', label: 'Tagline', type: 'text' },
  { key: 'website', label: 'Website', type: 'url' },
  { key: 'note', label: 'Anything else', type: 'text', required: false },
];

describe.each(DATABASES)('approving everything at once, and what waits for review, on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  async function setup() {
    const created = await server.createAccount({ plan: 'agency' });
    const test = client(server.url, created.test_key);
    const create = async () => {
      const answer = await test.post<Body>('/v1/intakes', {
        project_name: 'Website copy',
        client: { email: `c-${Math.random().toString(36).slice(2)}@example.test` },
        items: ITEMS,
      });
      expect(answer.status, answer.text).toBe(201);
      return answer.body.intake_id as string;
    };
    const submit = async (id: string, items: string[]) => {
      const simulated = await test.post(`/v1/test_helpers/intakes/${id}/simulate`, {
        action: 'submit',
        items,
      });
      expect(simulated.status, simulated.text).toBe(200);
    };
    const status = async (id: string) => (await test.get<Status>(`/v1/intakes/${id}/status`)).body;
    const listed = async (query = '') =>
      (await test.get<{ intakes: ListedIntake[] }>(`/v1/intakes${query}`)).body.intakes;
    return { created, test, create, submit, status, listed };
  }

  it('counts submitted items awaiting review in the status and the list, and filters on it', async () => {
    const { create, submit, status, listed } = await setup();
    const waiting = await create();
    const untouched = await create();
    await submit(waiting, ['about', 'tagline']);

    expect((await status(waiting)).progress).toMatchObject({ submitted: 2, total: 4, awaiting_review: 2 });
    expect((await status(untouched)).progress.awaiting_review).toBe(0);
    const all = await listed();
    expect(all.find((i) => i.id === waiting)?.awaiting_review).toBe(2);
    expect(all.find((i) => i.id === untouched)?.awaiting_review).toBe(0);
    expect((await listed('?awaiting_review=true')).map((i) => i.id)).toEqual([waiting]);
    expect((await listed('?awaiting_review=false')).map((i) => i.id)).toEqual([untouched]);
  });

  it('approves every submitted item in one call; a repeat approves nothing; the intake completes', async () => {
    const { test, create, submit, status, listed } = await setup();
    const id = await create();
    await submit(id, ['about', 'tagline', 'website']);

    const first = await test.post<Body>(`/v1/intakes/${id}/approve`);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({
      intake_id: id,
      approved: ['about', 'tagline', 'website'],
      status: 'completed',
    });
    const after = await status(id);
    expect(after.progress.awaiting_review).toBe(0);
    expect(after.items.filter((i) => i.status === 'approved').map((i) => i.key)).toEqual([
      'about',
      'tagline',
      'website',
    ]);
    expect((await listed('?awaiting_review=true')).map((i) => i.id)).toEqual([]);

    // Each approval is its own item.approved, in order, and the results cursor sees all three.
    const results = await test.get<{ items: { key: string }[] }>(`/v1/intakes/${id}/results`);
    expect(results.body.items.map((i) => i.key)).toEqual(['about', 'tagline', 'website']);

    const again = await test.post<Body>(`/v1/intakes/${id}/approve`, {});
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ intake_id: id, approved: [], status: 'completed' });
  });

  it('approves only the given keys, refusing unknown (404) and unsubmitted (409) ones without a change', async () => {
    const { test, create, submit, status } = await setup();
    const id = await create();
    await submit(id, ['about', 'tagline']);

    expectError(
      await test.post(`/v1/intakes/${id}/approve`, { item_keys: ['about', 'nope'] }),
      404,
      'not_found',
    );
    expectError(
      await test.post(`/v1/intakes/${id}/approve`, { item_keys: ['about', 'website'] }),
      409,
      'conflict',
    );
    // Neither refusal approved "about" on its way.
    expect((await status(id)).progress.awaiting_review).toBe(2);

    const some = await test.post<Body>(`/v1/intakes/${id}/approve`, { item_keys: ['tagline'] });
    expect(some.status, some.text).toBe(200);
    expect(some.body).toEqual({ intake_id: id, approved: ['tagline'], status: 'in_progress' });
    expect((await status(id)).progress.awaiting_review).toBe(1);

    expectError(await test.post(`/v1/intakes/${id}/approve`, { item_keys: [] }), 400, 'invalid_request');
  });

  it("is secured, and another account's intake is not found", async () => {
    const { created, create } = await setup();
    const id = await create();
    const readOnly = client(server.url, created.test_key);
    const key = await readOnly.post<{ key: string }>('/v1/keys', {
      name: 'reader',
      scopes: ['intakes:read'],
    });
    expect(key.status, key.text).toBe(201);
    await expectSecured(
      client(server.url),
      client(server.url, key.body.key),
      'POST',
      `/v1/intakes/${id}/approve`,
    );
    const other = await server.createAccount({ plan: 'agency' });
    expectError(await client(server.url, other.test_key).post(`/v1/intakes/${id}/approve`), 404, 'not_found');
  });
});
