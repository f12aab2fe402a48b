import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, secretBox, signatureHeader, SECRET_PATTERN } from './signing.js';
import { checkSignature, verifySignature } from './verify.js';
import { summarize, renderBody } from './webhooks.format.js';
import { EVENT_CATALOGUE, WEBHOOK_EVENT_NAMES, examplePayload } from './webhooks.events.js';
import { MAX_DELIVERY_ATTEMPTS, MAX_JITTER_MS, retryDelayMs } from './webhooks.schedule.js';

/** stripe-node's verifier: an independent implementation of the same scheme. */
function stripeVerify(payload: string, header: string, secret: string, tolerance: number): boolean {
  const signature = Stripe.webhooks.signature;
  if (!signature) throw new Error('stripe-node has no webhooks.signature');
  return signature.verifyHeader(payload, header, secret, tolerance);
}

const body = JSON.stringify({ id: 'evt_1', event: 'item.submitted', note: 'é ✓ "quoted"' });
const now = 1_800_000_000;

describe('signatureHeader', () => {
  it('is t=<unix>,v1=<lowercase hex HMAC-SHA256 of "<t>.<body>" keyed with the whole secret>', () => {
    // Reference computed apart: printf '1800000000.{}' | openssl dgst -sha256 -hmac 'whsec_test'
    expect(signatureHeader('{}', ['whsec_test'], now)).toBe(
      't=1800000000,v1=482e6337ac5272392d375c6fdc4d52a7e615dc2facedab0ffe155ddfd6a56e66',
    );
    const header = signatureHeader(body, ['whsec_abc'], now);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
  });

  it('is accepted by stripe-node, an independent implementation', () => {
    const secret = generateWebhookSecret();
    const header = signatureHeader(body, [secret], Math.floor(Date.now() / 1000));
    expect(stripeVerify(body, header, secret, 300)).toBe(true);
    expect(() => stripeVerify(body + ' ', header, secret, 300)).toThrow();
    expect(() => stripeVerify(body, header, generateWebhookSecret(), 300)).toThrow();
  });

  it('carries one v1 per secret during a rotation, each verifiable alone', () => {
    const [fresh, old] = [generateWebhookSecret(), generateWebhookSecret()];
    const header = signatureHeader(body, [fresh, old], Math.floor(Date.now() / 1000));
    expect(header.match(/v1=/g)).toHaveLength(2);
    expect(stripeVerify(body, header, fresh, 300)).toBe(true);
    expect(stripeVerify(body, header, old, 300)).toBe(true);
    expect(verifySignature(body, header, fresh)).toBe(true);
    expect(verifySignature(body, header, old)).toBe(true);
  });
});

describe('verifySignature', () => {
  const secret = 'whsec_0123456789abcdefghijklmnop';
  const header = signatureHeader(body, [secret], now);

  it('accepts the exact body within the tolerance, as a string or as bytes', () => {
    expect(verifySignature(body, header, secret, { nowSeconds: now })).toBe(true);
    expect(verifySignature(Buffer.from(body), header, secret, { nowSeconds: now + 300 })).toBe(true);
    expect(
      verifySignature(body, header, ['whsec_other_000000000000000000', secret], { nowSeconds: now }),
    ).toBe(true);
  });

  it('rejects with a reason: stale, future, tampered, wrong secret, malformed, missing', () => {
    const at = { nowSeconds: now };
    expect(checkSignature(body, header, secret, { nowSeconds: now + 301 })).toEqual({
      valid: false,
      reason: 'timestamp_outside_tolerance',
    });
    expect(checkSignature(body, header, secret, { nowSeconds: now - 301 }).valid).toBe(false);
    expect(checkSignature(body, header, secret, { nowSeconds: now + 10, toleranceSeconds: 5 }).valid).toBe(
      false,
    );
    expect(checkSignature(body.replace('1', '2'), header, secret, at)).toEqual({
      valid: false,
      reason: 'no_matching_signature',
    });
    expect(checkSignature(body, header, 'whsec_wrong_0000000000000000000', at).valid).toBe(false);
    expect(checkSignature(body, 'v1=abc', secret, at)).toEqual({ valid: false, reason: 'malformed_header' });
    expect(checkSignature(body, 't=abc,v1=00', secret, at).valid).toBe(false);
    expect(checkSignature(body, undefined, secret, at)).toEqual({ valid: false, reason: 'missing_header' });
    // A v1 of the right length but another body: compared in constant time, refused.
    const other = signatureHeader('{}', [secret], now).split(',')[1] ?? '';
    expect(verifySignature(body, `t=${now},${other}`, secret, at)).toBe(false);
  });

  it('verifies what stripe-node signs (the other direction)', () => {
    const stripeHeader = Stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    expect(verifySignature(body, stripeHeader, secret)).toBe(true);
  });
});

describe('secrets', () => {
  it('generates whsec_ secrets of the accepted shape, and seals them per endpoint', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(SECRET_PATTERN);
    const box = secretBox('k'.repeat(64));
    const sealed = box.seal('wh_1', secret);
    expect(sealed).not.toContain(secret);
    expect(box.open('wh_1', sealed)).toBe(secret);
    expect(() => box.open('wh_2', sealed)).toThrow();
  });
});

describe('retry schedule', () => {
  it("follows SPEC's table: 1 m, 5 m, 25 m, 2 h, 12 h, 12 h, then give up after the 7th attempt", () => {
    const minutes = [1, 5, 25, 120, 720, 720];
    expect(MAX_DELIVERY_ATTEMPTS).toBe(7);
    for (const [index, expected] of minutes.entries()) {
      expect(retryDelayMs(index + 1, () => 0)).toBe(expected * 60_000);
      const withJitter = retryDelayMs(index + 1, () => 0.999_999) ?? 0;
      expect(withJitter - expected * 60_000).toBeLessThan(MAX_JITTER_MS);
    }
    expect(retryDelayMs(7)).toBeNull();
    expect(retryDelayMs(0)).toBeNull();
  });
});

describe('event catalogue and formats', () => {
  it('has the eleven names of SPEC plus CONTRACT’s three extras', () => {
    expect(WEBHOOK_EVENT_NAMES).toHaveLength(14);
    for (const name of [
      'intake.sent',
      'intake.viewed',
      'intake.complete',
      'item.submitted',
      'item.approved',
      'item.revision_requested',
      'chase.sent',
      'intake.completed',
      'client.viewed',
      'chase.bounced',
      'intake.stalled',
      'intake.overdue',
      'chase.opted_out',
      'comment.created',
    ]) {
      expect(Object.hasOwn(EVENT_CATALOGUE, name)).toBe(true);
    }
  });

  it('makes fictional payloads with the common fields, and short messages for chat formats', () => {
    for (const name of WEBHOOK_EVENT_NAMES) {
      const payload = examplePayload(name, { now: '2026-05-04T10:00:00.000Z', livemode: false });
      expect(payload).toMatchObject({
        event: name,
        occurred_at: '2026-05-04T10:00:00.000Z',
        livemode: false,
      });
      expect(payload.id).toMatch(/^evt_/);
      expect(payload.intake_id).toMatch(/^in_[0-9A-Za-z]{22}$/);
      const text = summarize(payload);
      expect(text.startsWith('[test] ')).toBe(true);
      expect(text).not.toMatch(/undefined|\(\)| {2}/);
      const slack = JSON.parse(renderBody('slack', payload)) as { text: string; blocks: unknown[] };
      expect(Object.keys(slack)).toEqual(['text', 'blocks']);
      expect(slack.text).toBe(text);
      expect(slack.blocks.length).toBeGreaterThanOrEqual(2);
      const discord = JSON.parse(renderBody('discord', payload)) as { content: string; embeds: unknown[] };
      expect(discord.content).toBe(text);
      expect(discord.embeds).toHaveLength(1);
      expect(JSON.parse(renderBody('raw', payload))).toEqual(payload);
    }
  });
});
