import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookHttpClient } from './delivery.js';

/** A loopback receiver: /ok answers 200 at once, /hang never answers. */
describe('the webhook HTTP client', () => {
  let server: Server;
  let base: string;
  const http = new WebhookHttpClient(() => true);

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      if (request.url === '/ok') response.writeHead(200).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await http.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (path: string, shutdown: AbortSignal, timeoutMs = 5_000) =>
    http.send({ url: `${base}${path}`, body: '{}', headers: {}, timeoutMs, shutdown });

  it("leaves no listener on the job's signal after its requests, whatever their outcome", async () => {
    const shutdown = new AbortController().signal;
    for (let n = 0; n < 20; n++) expect((await send('/ok', shutdown)).outcome).toBe('succeeded');
    expect((await send('/hang', shutdown, 50)).error).toBe('no response within 50 ms');
    expect(getEventListeners(shutdown, 'abort')).toHaveLength(0);
  });

  it('ends a request at its deadline, and one whose job is stopped as interrupted', async () => {
    const late = await send('/hang', new AbortController().signal, 80);
    expect(late).toMatchObject({ outcome: 'failed', status: null, interrupted: false });
    expect(late.durationMs).toBeGreaterThanOrEqual(70);

    const stopping = new AbortController();
    const pending = send('/hang', stopping.signal);
    setTimeout(() => stopping.abort(new Error('shutdown')), 30);
    expect(await pending).toMatchObject({ outcome: 'failed', interrupted: true });

    const stopped = new AbortController();
    stopped.abort(new Error('shutdown'));
    expect(await send('/ok', stopped.signal)).toMatchObject({ interrupted: true });
  });
});
