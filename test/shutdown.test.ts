import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestServer } from './helpers/server.js';

/**
 * Stopping the server finishes the request in flight and then closes its keep-alive connection at once,
 * instead of waiting for the connection's keep-alive timeout (72 s) because it turned idle only after
 * closing began.
 */

function answerOn(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) resolve(text);
    });
    socket.on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('shutdown', () => {
  it('finishes the request in flight, then closes its keep-alive connection without waiting', async () => {
    const server = await startTestServer('sqlite');
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const answer = answerOn(socket);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));

    // A keep-alive request whose body is not complete yet: it is in flight when the stop begins.
    socket.write(
      'PUT /portal/api/in_unknownunknownunknown1/items/about HTTP/1.1\r\nHost: localhost\r\n' +
        'Connection: keep-alive\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"value":',
    );
    await sleep(200);
    const started = Date.now();
    const stopping = server.stop();
    await sleep(200);
    socket.write('"x"}');

    expect(await answer).toMatch(/^HTTP\/1\.1 404 /);
    await stopping;
    await closed;
    // Before the fix this took the keep-alive timeout (72 s); the sweep closes it within a tenth of a second.
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
