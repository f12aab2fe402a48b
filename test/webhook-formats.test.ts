import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../src/modules/webhooks/verify.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { answer, eventually, failingTimes, startReceiver, type Receiver } from './helpers/receivers.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Endpoint {
  id: string;
  format: string;
  events: string[];
  secret?: string;
}
interface SlackMessage {
  text: string;
  blocks: {
    type: string;
    text?: { text: string };
    fields?: { text: string }[];
    elements?: { text: string }[];
  }[];
}
interface DiscordMessage {
  content: string;
  embeds: {
    title: string;
    description: string;
    color: number;
    fields: { name: string; value: string; inline: boolean }[];
    timestamp?: string;
    footer: { text: string };
  }[];
  allowed_mentions: { parse: string[] };
}

const DAY = 86_400_000;
const ITEMS = [
  { key: 'logo', label: 'Logo', type: 'text' },
  { key: 'notes', label: 'Notes', type: 'longtext', required: false },
];

describe.each(DATABASES)('webhook formats (raw, slack, discord) on %s', (database) => {
  let server: TestServer;
  let test: Client;
  let receiver: Receiver;
  let steady: Receiver;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    test = client(server.url, account.test_key);
    receiver = await startReceiver(failingTimes(1));
    steady = await startReceiver(answer(200));
  });
  afterAll(async () => {
    await receiver.close();
    await steady.close();
    await server.stop();
  });

  const clockNow = async () =>
    Date.parse(
      (await test.post<Body>('/v1/test_helpers/advance_clock', { seconds: 1 })).body.test_clock as string,
    );

  it('slack: {text, blocks}, escaped, signed, retried and logged like any delivery', async () => {
    const created = await test.post<Endpoint>('/v1/webhooks', {
      url: receiver.url,
      events: ['intake.overdue'],
      format: 'slack',
    });
    expect(created.status, created.text).toBe(201);
    const endpoint = created.body;
    const now = await clockNow();
    const intake = await test.post<Body>('/v1/intakes', {
      project_name: 'Logo <!channel> & co',
      client: { email: 'slack-client@example.test' },
      items: ITEMS,
      due_date: new Date(now + DAY).toISOString().slice(0, 10),
    });
    expect(intake.status, intake.text).toBe(201);
    await test.post('/v1/test_helpers/advance_clock', { seconds: 2 * 86_400 });
    await receiver.waitFor(1);
    // The first attempt got HTTP 500: the retry comes a minute after the failure is recorded (test
    // clock). The clock moves only once that failure is logged: moved earlier, the retry would be
    // planned a minute after the moved clock and never come due.
    await eventually(async () => {
      const page = await test.get<{ deliveries: { outcome: string }[] }>(
        `/v1/webhooks/${endpoint.id}/deliveries`,
      );
      return page.body.deliveries.some((d) => d.outcome === 'failed') ? true : undefined;
    }, 'the failed first attempt logged');
    await test.post('/v1/test_helpers/advance_clock', { seconds: 70 });
    const [first, second] = await receiver.waitFor(2);
    for (const request of [first, second]) {
      expect(
        verifySignature(
          request?.body ?? '',
          request?.headers['service-signature'] as string,
          endpoint.secret ?? '',
        ),
      ).toBe(true);
      expect(request?.headers['content-type']).toContain('application/json');
    }
    const message = JSON.parse(second?.body ?? '{}') as SlackMessage;
    expect(Object.keys(message)).toEqual(['text', 'blocks']);
    expect(message.text).toContain('is overdue (missing: logo)');
    expect(message.text.startsWith('[test] ')).toBe(true);
    const [section, facts, context] = message.blocks;
    expect(section?.text?.text).toContain('Logo &lt;!channel&gt; &amp; co');
    expect(section?.text?.text).not.toContain('<!channel>');
    expect(facts?.fields?.map((f) => f.text)).toEqual(
      expect.arrayContaining(['*Missing items*\nlogo', '*Client*\nslack-client@example.test']),
    );
    expect(context?.elements?.[0]?.text).toMatch(/^intake\.overdue · .+ · test mode$/);

    const log = await eventually(async () => {
      const page = await test.get<{ deliveries: { attempt: number; outcome: string; event: string }[] }>(
        `/v1/webhooks/${endpoint.id}/deliveries`,
      );
      return page.body.deliveries.length >= 2 ? page.body.deliveries : undefined;
    }, 'two logged attempts');
    expect(log.map((d) => [d.event, d.attempt, d.outcome])).toEqual([
      ['intake.overdue', 2, 'succeeded'],
      ['intake.overdue', 1, 'failed'],
    ]);
  });

  it('PATCH switches a format (and events); discord gets {content, embeds} without mentions', async () => {
    const created = await test.post<Endpoint>('/v1/webhooks', { url: steady.url, events: ['intake.sent'] });
    expect(created.body.format).toBe('raw');
    const patched = await test.patch<Endpoint>(`/v1/webhooks/${created.body.id}`, {
      format: 'discord',
      events: ['item.submitted', 'item.submitted'],
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      id: created.body.id,
      format: 'discord',
      events: ['item.submitted'],
    });
    expect(patched.body.secret).toBeUndefined();
    const listed = await test.get<{ webhooks: Endpoint[] }>('/v1/webhooks');
    expect(listed.body.webhooks.find((w) => w.id === created.body.id)?.format).toBe('discord');

    const intake = await test.post<Body>('/v1/intakes', {
      project_name: 'Discord check',
      client: { email: 'discord-client@example.test' },
      items: ITEMS,
    });
    const from = steady.requests.length;
    await test.post(`/v1/test_helpers/intakes/${intake.body.intake_id as string}/simulate`, {
      action: 'submit',
      items: ['logo'],
    });
    const [request] = (await steady.waitFor(from + 1)).slice(from);
    expect(
      verifySignature(
        request?.body ?? '',
        request?.headers['x-service-signature'] as string,
        created.body.secret ?? '',
      ),
    ).toBe(true);
    const message = JSON.parse(request?.body ?? '{}') as DiscordMessage;
    expect(message.content).toMatch(/^\[test\] Item "logo" submitted \(intake in_[0-9A-Za-z]{22}\)$/);
    expect(message.allowed_mentions).toEqual({ parse: [] });
    expect(message.embeds).toHaveLength(1);
    expect(message.embeds[0]).toMatchObject({
      title: 'item.submitted',
      description: message.content,
      footer: { text: 'test mode' },
    });
    expect(message.embeds[0]?.fields).toEqual(
      expect.arrayContaining([{ name: 'Item', value: 'logo', inline: true }]),
    );

    // Back to raw: the event payload itself, as before.
    await test.patch(`/v1/webhooks/${created.body.id}`, { format: 'raw' });
    const before = steady.requests.length;
    expect(
      (await test.post(`/v1/webhooks/${created.body.id}/test`, { event: 'item.submitted' })).status,
    ).toBe(200);
    const [raw] = (await steady.waitFor(before + 1)).slice(before);
    expect(JSON.parse(raw?.body ?? '{}')).toMatchObject({ event: 'item.submitted', item_key: 'logo' });
  });

  it('checks PATCH like registration, and keeps it to admin keys of the same account', async () => {
    const created = await test.post<Endpoint>('/v1/webhooks', { url: steady.url, events: ['intake.sent'] });
    const path = `/v1/webhooks/${created.body.id}`;
    expectError(await test.patch(path, { events: ['intake.exploded'] }), 422, 'unprocessable');
    expectError(await test.patch(path, { format: 'teams' }), 400, 'invalid_request');
    expectError(
      await test.patch(path, { secret: 'whsec_abcdefghijklmnopqrstuvwxyz' }),
      400,
      'invalid_request',
    );
    expectError(await test.patch('/v1/webhooks/wh_doesnotexist', { format: 'slack' }), 404, 'not_found');
    const other = await server.createAccount({ plan: 'agency' });
    expectError(await client(server.url, other.test_key).patch(path, { format: 'slack' }), 404, 'not_found');
    const narrow = await test.post<{ key: string }>('/v1/keys', { name: 'reader', scopes: ['intakes:read'] });
    await expectSecured(client(server.url), client(server.url, narrow.body.key), 'PATCH', path, {
      format: 'slack',
    });
    const unchanged = await test.get<{ webhooks: Endpoint[] }>('/v1/webhooks');
    expect(unchanged.body.webhooks.find((w) => w.id === created.body.id)?.format).toBe('raw');
  });
});
