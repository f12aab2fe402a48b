import { imageSize } from 'image-size';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/server.js';

describe('the site root and its icon', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(async () => {
    await server.stop();
  });

  it('sends a browser from / to the dashboard, and an API client gets the JSON 404 as before', async () => {
    const browser = await fetch(`${server.url}/`, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      redirect: 'manual',
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/dashboard');

    const api = await fetch(`${server.url}/`, { headers: { accept: 'application/json' } });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: string }).error).toBe('not_found');
  });

  it('answers /favicon.ico with a real icon file', async () => {
    const answer = await fetch(`${server.url}/favicon.ico`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/x-icon');
    const bytes = Buffer.from(await answer.arrayBuffer());
    // An independent reader of the format finds one 32×32 icon in it.
    expect(imageSize(bytes)).toMatchObject({ type: 'ico', width: 32, height: 32 });
    // The same bytes again (made once per process).
    const again = Buffer.from(await (await fetch(`${server.url}/favicon.ico`)).arrayBuffer());
    expect(again.equals(bytes)).toBe(true);
  });
});
