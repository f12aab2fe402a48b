import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Deleting an intake at once after sending it, while the worker is sending its invitation: the worker
 * finishing that job and the deletion touch the same job and message rows, and must take them in the
 * same order (on PostgreSQL, the other order deadlocked and answered 500 for about one in four).
 */
describe.each(DATABASES)('deleting an intake while its invitation is being sent on %s', (database) => {
  let server: TestServer;
  let live: Client;
  beforeAll(async () => {
    server = await startTestServer(database);
    live = client(server.url, (await server.createAccount({ plan: 'agency' })).live_key);
  });
  afterAll(async () => server.stop());

  it('deletes every one (204), and each is gone', async () => {
    const answers: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 30; i += 1) {
      const created = await live.post<{ intake_id: string }>('/v1/intakes', {
        project_name: `Race ${i}`,
        client: { email: `race-${i}@example.com` },
        items: [{ key: 'logo', label: 'Logo', type: 'text' }],
      });
      expect(created.status, created.text).toBe(201);
      ids.push(created.body.intake_id);
      answers.push((await live.delete(`/v1/intakes/${created.body.intake_id}`)).status);
    }
    expect(answers).toEqual(ids.map(() => 204));
    for (const id of ids) expect((await live.get(`/v1/intakes/${id}`)).status).toBe(404);
  });
});
