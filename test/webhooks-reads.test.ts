import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import {
  findDeliveriesToAttempt,
  insertDelivery,
  insertEndpoint,
  type DeliveryRow,
  type EndpointRow,
} from '../src/modules/webhooks/webhooks.repository.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';
import { endpointRow } from './helpers/webhook-rows.js';

/**
 * What a webhook attempt reads before it posts: its delivery and that delivery's endpoint, for every
 * attempt starting in the same pass, in one statement.
 */
describe.each(DATABASES)('the deliveries an attempt reads, with their endpoints, on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;
  const at = '2030-01-01T00:00:00.000Z';

  const endpoint = (id: string, overrides: Partial<EndpointRow> = {}): EndpointRow =>
    endpointRow(id, 'acct_reads', at, { events: ['intake.sent', 'item.submitted'], ...overrides });

  const delivery = (id: string, endpointId: string, attempts: number): DeliveryRow => ({
    id,
    account_id: 'acct_reads',
    livemode: 1,
    endpoint_id: endpointId,
    event_id: `evt_${id}`,
    event_type: 'intake.sent',
    payload: { id: `evt_${id}`, data: { intake_id: 'in_1', nested: [1, 'two'] } },
    test: 0,
    status: 'pending',
    attempts,
    next_attempt_at: at,
    lease_owner: null,
    lease_until: null,
    created_at: at,
    completed_at: null,
  });

  // Every column the first one leaves as it is, set otherwise.
  const secondEndpoint = endpoint('we_b', {
    format: 'slack',
    events: ['*'],
    previous_secret_ciphertext: 'sealed-old',
    previous_secret_expires_at: at,
    status: 'disabled',
    disabled_reason: 'manual',
    disabled_at: at,
    updated_at: '2030-01-02T00:00:00.000Z',
  });

  beforeAll(async () => {
    opened = await openTestDatabase(database);
    db = opened.db;
    await db.kysely
      .insertInto('accounts')
      .values({
        id: 'acct_reads',
        name: 'Reads',
        email: 'reads@example.com',
        plan: 'free',
        default_language: 'en',
        rate_limit_per_hour: null,
        created_at: at,
      })
      .execute();
    await insertEndpoint(db.kysely, endpoint('we_a'));
    await insertEndpoint(db.kysely, secondEndpoint);
    await insertDelivery(db.kysely, delivery('whd_1', 'we_a', 0));
    await insertDelivery(db.kysely, delivery('whd_2', 'we_b', 2));
    await insertDelivery(db.kysely, delivery('whd_3', 'we_a', 1));
  });
  afterAll(() => opened.close());

  it('reads each delivery with its own endpoint, both as their own reads give them', async () => {
    const found = await findDeliveriesToAttempt(db.kysely, ['whd_1', 'whd_2', 'whd_3', 'whd_missing']);
    expect([...found.keys()].sort()).toEqual(['whd_1', 'whd_2', 'whd_3']);
    expect(found.get('whd_1')).toEqual({
      delivery: delivery('whd_1', 'we_a', 0),
      endpoint: endpoint('we_a'),
    });
    expect(found.get('whd_3')).toEqual({
      delivery: delivery('whd_3', 'we_a', 1),
      endpoint: endpoint('we_a'),
    });
    expect(found.get('whd_2')?.delivery).toEqual(delivery('whd_2', 'we_b', 2));
    expect(found.get('whd_2')?.endpoint).toEqual(secondEndpoint);
    // The delivery carries none of its endpoint's columns (its secret least of all).
    for (const { delivery: read } of found.values()) {
      expect(Object.keys(read).sort()).toEqual(Object.keys(delivery('x', 'y', 0)).sort());
    }
  });

  it('reads nothing for no delivery it knows', async () => {
    expect((await findDeliveriesToAttempt(db.kysely, ['whd_missing'])).size).toBe(0);
  });

  it('reads more deliveries than one statement takes, each once, and none for no ids', async () => {
    const many = Array.from({ length: 37 }, (_, i) => `whd_many_${String(i).padStart(2, '0')}`);
    for (const [i, id] of many.entries())
      await insertDelivery(db.kysely, delivery(id, i % 2 ? 'we_a' : 'we_b', i));
    // Asked for in another order, with ids it does not know among them.
    const asked = [...many].reverse().flatMap((id, i) => (i % 10 === 0 ? [id, `whd_unknown_${i}`] : [id]));
    const found = await findDeliveriesToAttempt(db.kysely, asked);
    expect([...found.keys()].sort()).toEqual(many);
    for (const [i, id] of many.entries()) {
      expect(found.get(id)).toEqual({
        delivery: delivery(id, i % 2 ? 'we_a' : 'we_b', i),
        endpoint: i % 2 ? endpoint('we_a') : secondEndpoint,
      });
    }
    expect((await findDeliveriesToAttempt(db.kysely, [])).size).toBe(0);
  });
});
