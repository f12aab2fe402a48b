import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_LIMITS } from '../src/modules/portal/portal.security.js';
import { JSON_BODY_LIMIT } from '../src/app.js';
import { DATABASES } from './helpers/env.js';
import { createIntake, createWorld, type HardeningWorld } from './helpers/hardening-world.js';
import { client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { fetchOpenApi, operationName, operationsOf } from './helpers/openapi-contract.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Abuse: body size limits per route, upload floods on one portal link, list limits, the rate limiter
 * against spoofed client headers, and slow clients (slowloris) that must be cut off without starving
 * anyone else.
 */

/** Sends `count` requests, `concurrency` at a time; the statuses in order of completion. */
async function flood(
  count: number,
  concurrency: number,
  send: (i: number) => Promise<number>,
): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const lanes = Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      statuses.push(await send(i));
    }
  });
  await Promise.all(lanes);
  return statuses;
}

describe.each(DATABASES)('abuse on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
  });
  afterAll(async () => server?.stop());

  it('refuses JSON bodies over the limit on every JSON operation with 413', async () => {
    const ops = operationsOf(await fetchOpenApi(server.url)).filter((op) => op.bodySchema);
    expect(ops.length).toBeGreaterThan(15);
    const huge = JSON.stringify({ padding: 'x'.repeat(JSON_BODY_LIMIT + 10) });
    for (const op of ops) {
      const path = op.path.replace(/\{[^}]+\}/g, 'x');
      const response = await world.apiFor(path).call(op.method, path, {
        rawBody: huge,
        headers: { 'content-type': 'application/json' },
      });
      expectError(response, 413, 'payload_too_large');
      expect(op.statuses.has(413), `${operationName(op)} documents 413`).toBe(true);
    }
    console.info(`body limit (${database}): ${ops.length} JSON operations answered 413`);
  });

  it("refuses a portal upload over the item's max_bytes with 413 and stores nothing", async () => {
    const id = await createIntake(world.api, {
      items: [{ key: 'logo', label: 'Logo', type: 'image', constraints: { max_bytes: 2_000 } }],
    });
    const big = await png(800, 800);
    expect(big.length).toBeGreaterThan(2_000);
    const response = await fetch(`${server.url}/portal/api/${id}/items/logo/files`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', 'x-filename': 'big.png' },
      body: big,
    });
    expect(response.status).toBe(413);
    const rows = await server.server.services.db.kysely
      .selectFrom('item_files')
      .select('id')
      .where('intake_id', '=', id)
      .execute();
    expect(rows).toEqual([]);
  });

  it('rate limits a flood of writes on one portal link, whatever X-Forwarded-For says', async () => {
    const id = await createIntake(world.api);
    const url = (i: number) => `${server.url}/portal/api/${id}/items/logo/files/file_missing${i}`;
    const statuses = await flood(PORTAL_LIMITS.writesPerIntake, 16, async (i) => {
      const response = await fetch(url(i), {
        method: 'DELETE',
        headers: { 'x-forwarded-for': `203.0.113.${i % 250}` },
      });
      await response.arrayBuffer();
      return response.status;
    });
    expect(statuses.filter((status) => status === 429)).toEqual([]);
    const upload = await fetch(`${server.url}/portal/api/${id}/items/logo/files`, {
      method: 'POST',
      headers: {
        'content-type': 'image/png',
        'x-filename': 'flood.png',
        'x-forwarded-for': '198.51.100.7',
        'x-real-ip': '198.51.100.8',
        forwarded: 'for=198.51.100.9',
      },
      body: await png(64, 64),
    });
    expect(upload.status).toBe(429);
    expect(Number(upload.headers.get('retry-after'))).toBeGreaterThan(0);
    const rows = await server.server.services.db.kysely
      .selectFrom('item_files')
      .select('id')
      .where('intake_id', '=', id)
      .execute();
    expect(rows).toEqual([]);
    // Another intake's client is not affected.
    const otherIntake = await createIntake(world.api);
    const other = await fetch(`${server.url}/portal/api/${otherIntake}/items/about`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'still fine' }),
    });
    expect(other.status).toBe(200);
  });

  it('rejects limit above 100 (and below 1) on every list operation that takes one', async () => {
    const lists = operationsOf(await fetchOpenApi(server.url)).filter((op) =>
      op.queryParams.some((param) => param.name === 'limit'),
    );
    expect(lists.map(operationName)).toContain('GET /v1/intakes');
    for (const op of lists) {
      const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => world.idFor(op.path, name));
      for (const bad of ['101', '1000000', '0', '-1', 'abc', '1e3']) {
        expectError(await world.apiFor(path).get(`${path}?limit=${bad}`), 400, 'invalid_request');
      }
      expect((await world.apiFor(path).get(`${path}?limit=100`)).status, operationName(op)).toBe(200);
    }
  });

  it('cannot be talked out of the API rate limit with client headers', async () => {
    const limited = await server.createAccount({ plan: 'agency', rateLimitPerHour: 5 });
    const api = client(server.url, limited.live_key);
    for (let i = 0; i < 5; i++) expect((await api.get('/v1/account')).status).toBe(200);
    const spoofs: Record<string, string>[] = [
      {},
      { 'x-forwarded-for': '1.2.3.4' },
      { 'x-real-ip': '1.2.3.5' },
      { forwarded: 'for=1.2.3.6;proto=https' },
      { 'true-client-ip': '1.2.3.7' },
      { 'cf-connecting-ip': '1.2.3.8' },
      { 'x-client-ip': '1.2.3.9' },
      { 'x-forwarded-host': 'other.example' },
      { 'user-agent': 'something-else/1.0' },
      { authorization: `bearer   ${limited.live_key}  ` },
    ];
    for (const headers of spoofs) {
      const response = await api.get('/v1/account', { headers });
      expectError(response, 429, 'rate_limited');
      expect(response.headers.get('retry-after'), JSON.stringify(headers)).toMatch(/^\d+$/);
    }
    // The test key is its own bucket (SPEC: a separate rate-limit bucket).
    expect((await client(server.url, limited.test_key).get('/v1/account')).status).toBe(200);
  });
});

/** Raw sockets, so the client can be as slow as an attacker's. */
function openSocket(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves with what the server sent once it closes the connection. */
function closedByServer(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(received));
  });
}

// Transport behaviour, the same over either database: run once, on the embedded default.
describe('slow clients (slowloris)', () => {
  let server: TestServer;
  const sockets: net.Socket[] = [];
  const timers: NodeJS.Timeout[] = [];

  beforeAll(async () => {
    server = await startTestServer('sqlite', {
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '3000',
      HTTP_IDLE_TIMEOUT_MS: '1500',
    });
  });
  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const socket of sockets) socket.destroy();
    await server?.stop();
  });

  it('cuts off clients that dribble headers, stall a body or say nothing, while others are served', async () => {
    const closings: Promise<string>[] = [];
    // 1. Headers sent one line at a time, forever.
    for (let i = 0; i < 30; i++) {
      const socket = await openSocket(server.url);
      sockets.push(socket);
      closings.push(closedByServer(socket));
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
      timers.push(setInterval(() => socket.writable && socket.write(`X-Slow-${i}: 1\r\n`), 200));
    }
    // 2. A body promised and never sent.
    for (let i = 0; i < 10; i++) {
      const socket = await openSocket(server.url);
      sockets.push(socket);
      closings.push(closedByServer(socket));
      socket.write(
        'POST /v1/intakes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":',
      );
    }
    // 3. A body dribbled one byte at a time.
    for (let i = 0; i < 10; i++) {
      const socket = await openSocket(server.url);
      sockets.push(socket);
      closings.push(closedByServer(socket));
      socket.write(
        'POST /portal/api/in_x/items/a HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
      );
      timers.push(setInterval(() => socket.writable && socket.write(' '), 200));
    }
    // 4. A connection that never says anything.
    for (let i = 0; i < 10; i++) {
      const socket = await openSocket(server.url);
      sockets.push(socket);
      closings.push(closedByServer(socket));
    }

    // Meanwhile everyone else is served.
    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${server.url}/healthz`);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }

    // Every slow connection is closed by the server (the test's own timeout bounds the wait).
    const answers = await Promise.all(closings);
    expect(answers).toHaveLength(60);
    // Slow header senders get a 408 where the server could still answer at all.
    expect(answers.slice(0, 30).filter((text) => text.startsWith('HTTP/1.1 408')).length).toBeGreaterThan(0);
    expect(answers.every((text) => !/^HTTP\/1\.1 5\d\d/.test(text))).toBe(true);
    const after = await fetch(`${server.url}/healthz`);
    expect(after.status).toBe(200);
  }, 30_000);

  it('answers an oversized request head with a 4xx, not a crash', async () => {
    const response = await fetch(`${server.url}/v1/account`, {
      headers: { 'x-huge': 'x'.repeat(64 * 1024) },
    }).catch(() => undefined);
    if (response) expect(response.status).toBeGreaterThanOrEqual(400);
    if (response) expect(response.status).toBeLessThan(500);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
