import type { LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookHttpClient } from '../src/modules/webhooks/delivery.js';
import {
  AddressRefusedError,
  guardedLookup,
  urlRefusal,
  type LookupAll,
} from '../src/modules/webhooks/ssrf.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startReceiver, type Receiver } from './helpers/receivers.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * SSRF through webhook URLs, in production mode (private addresses refused): every spelling of a
 * private, loopback, link-local or mapped address; a name that resolves to one (an injected resolver,
 * no real DNS); a name that changes its answer between check and connect; a redirect to one.
 */

const REFUSED_URLS = [
  'https://169.254.169.254/latest/meta-data/',
  'https://[::1]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://[::ffff:7f00:1]/hook',
  'https://[0:0:0:0:0:ffff:169.254.169.254]/hook',
  'https://2130706433/hook', // decimal 127.0.0.1
  'https://0177.0.0.1/hook', // octal
  'https://0x7f.0.0.1/hook', // hex
  'https://0x7f000001/hook',
  'https://127.1/hook',
  'https://0/hook',
  'https://0.0.0.0/hook',
  'https://10.0.0.1/hook',
  'https://172.16.5.4/hook',
  'https://192.168.1.1/hook',
  'https://100.64.0.1/hook',
  'https://[fd00::1]/hook',
  'https://[fe80::1]/hook',
  'https://[64:ff9b::a9fe:a9fe]/hook', // NAT64 of 169.254.169.254
  'https://[2002:7f00:1::]/hook', // 6to4 of 127.0.0.1
  'https://localhost/hook', // a name that resolves to loopback (from the hosts file, not DNS)
  'https://user:pass@example.com/hook',
  'http://example.com/hook', // production wants https
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_FLUSHALL',
];

describe.each(DATABASES)('webhook URLs in production mode on %s', (database) => {
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    server = await startTestServer(database, {
      NODE_ENV: 'production',
      SECRET_KEY: 'ssrf-test-secret-key-0123456789abcdef',
    });
    const account = await server.createAccount({ plan: 'agency', rateLimitPerHour: 100_000 });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => server?.stop());

  it('refuses every private, loopback, link-local and mapped address, however it is spelled', async () => {
    for (const url of REFUSED_URLS) {
      const response = await api.post('/v1/webhooks', { url, events: ['item.submitted'] });
      expect([400, 422], `${url}: ${response.text}`).toContain(response.status);
      expectError(response, response.status, response.status === 400 ? 'invalid_request' : 'unprocessable');
    }
    const listed = await api.get<{ webhooks: unknown[] }>('/v1/webhooks');
    expect(listed.body.webhooks).toEqual([]);
  });
});

describe('webhook connections (the check at connect time)', () => {
  let receiver: Receiver;
  let redirector: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver(() => undefined);
    redirector = await startReceiver((_n, _request, response) => {
      response.writeHead(302, { location: receiver.url });
    });
  });
  afterAll(async () => {
    await receiver.close();
    await redirector.close();
  });

  /** A resolver that answers from a table: the name resolves wherever the test says. */
  function fakeResolver(table: Record<string, string[]>): LookupAll {
    return (hostname, _options, callback) => {
      const addresses = table[hostname];
      if (!addresses) {
        callback(Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' }), []);
        return;
      }
      callback(
        null,
        addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    };
  }

  it('refuses at registration a name that resolves to a private address', async () => {
    const strict = { production: true, allowPrivate: false };
    const resolveTo =
      (...addresses: string[]) =>
      () =>
        Promise.resolve(addresses);
    expect(await urlRefusal('https://metadata.example/', strict, resolveTo('169.254.169.254'))).toContain(
      'link-local',
    );
    expect(
      await urlRefusal('https://inside.example/', strict, resolveTo('93.184.216.34', '10.1.2.3')),
    ).toContain('private');
    expect(await urlRefusal('https://v6.example/', strict, resolveTo('::ffff:127.0.0.1'))).toContain(
      'mapped',
    );
    expect(await urlRefusal('https://public.example/', strict, resolveTo('93.184.216.34'))).toBeUndefined();
  });

  it('refuses at connect time a name that resolves to a private address (DNS rebinding)', async () => {
    const port = new URL(receiver.url).port;
    // Passed the registration check once with a public answer; now it answers loopback.
    const agent = new Agent({
      connect: { lookup: guardedLookup(() => false, fakeResolver({ 'rebind.example': ['127.0.0.1'] })) },
    });
    const failure = await request(`http://rebind.example:${port}/hooks`, {
      method: 'POST',
      body: '{}',
      dispatcher: agent,
    }).catch((error: unknown) => error);
    await agent.close();
    let cause: unknown = failure;
    while (cause instanceof Error && !(cause instanceof AddressRefusedError)) cause = cause.cause;
    expect(cause).toBeInstanceOf(AddressRefusedError);
    expect(receiver.requests).toHaveLength(0);
  });

  it('never follows a redirect, even to a reachable address', async () => {
    // Private addresses allowed here, so the redirector itself can be reached on loopback.
    const http = new WebhookHttpClient(() => true);
    const attempt = await http.send({
      url: redirector.url,
      body: '{}',
      headers: { 'content-type': 'application/json' },
      timeoutMs: 5_000,
      shutdown: new AbortController().signal,
    });
    await http.close();
    expect(attempt.outcome).toBe('failed');
    expect(attempt.status).toBe(302);
    expect(attempt.error).toContain('redirects are not followed');
    expect(redirector.requests).toHaveLength(1);
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses IP literals at send time in production, before any connection', async () => {
    const http = new WebhookHttpClient(() => false);
    for (const url of [receiver.url, 'http://[::ffff:127.0.0.1]:9/x', 'http://169.254.169.254/latest']) {
      const attempt = await http.send({
        url,
        body: '{}',
        headers: {},
        timeoutMs: 5_000,
        shutdown: new AbortController().signal,
      });
      expect(attempt.outcome, url).toBe('failed');
      expect(attempt.status).toBeNull();
    }
    await http.close();
    expect(receiver.requests).toHaveLength(0);
  });
});
