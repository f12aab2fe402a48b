import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got: when (real ms), its headers and its raw body. */
export interface Received {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What a receiver does with its n-th request (from 1): answer, or hang until it is closed. */
export type Behaviour = (n: number, request: Received, response: ServerResponse) => 'hang' | void;

export interface Receiver {
  url: string;
  requests: Received[];
  /** Resolves with the requests once there are at least `count`; rejects after timeoutMs. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every request. */
export async function startReceiver(behaviour: Behaviour): Promise<Receiver> {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: Received = {
        at: Date.now(),
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(received);
      if (behaviour(requests.length, received, res) === 'hang') return;
      if (!res.writableEnded) res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) {
          throw new Error(
            `receiver got ${requests.length} requests, expected ${count} within ${timeoutMs} ms`,
          );
        }
        await sleep(20);
      }
      return requests;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export const answer =
  (status: number, body = 'ok', headers: Record<string, string> = {}): Behaviour =>
  (_n, _request, response) => {
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(body);
  };

/** Fails (HTTP 500) the first `failures` requests, then answers 200. */
export const failingTimes =
  (failures: number): Behaviour =>
  (n, request, response) =>
    n <= failures ? answer(500, 'boom')(n, request, response) : answer(200)(n, request, response);

export const hanging: Behaviour = () => 'hang';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value other than undefined; fails after timeoutMs. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}
