import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import { enqueueAttempt } from '../src/modules/webhooks/attempt.js';
import {
  insertDelivery,
  insertEndpoint,
  settleAttemptInOne,
  type AttemptRow,
  type DeliveryRow,
} from '../src/modules/webhooks/webhooks.repository.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/**
 * The one-statement record of a webhook attempt's final outcome on PostgreSQL: each part (the job's
 * end under its lease, the delivery's final state, the log row) happens only if the one before it did.
 */
describe.runIf(DATABASES.includes('postgres'))('settleAttemptInOne on postgres', () => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;
  const at = '2030-01-01T00:00:00.000Z';
  const LEASE = 1_900_000_000_000;

  beforeAll(async () => {
    opened = await openTestDatabase('postgres');
    db = opened.db;
    await db.kysely
      .insertInto('accounts')
      .values({
        id: 'acct_settle',
        name: 'Settle',
        email: 'settle@example.com',
        plan: 'free',
        default_language: 'en',
        rate_limit_per_hour: null,
        created_at: at,
      })
      .execute();
    await insertEndpoint(db.kysely, {
      id: 'we_settle',
      account_id: 'acct_settle',
      livemode: 1,
      url: 'https://example.com/hook',
      events: ['*'],
      format: 'raw',
      secret_ciphertext: 'sealed',
      previous_secret_ciphertext: null,
      previous_secret_expires_at: null,
      status: 'enabled',
      disabled_reason: null,
      disabled_at: null,
      created_at: at,
      updated_at: at,
    });
  });
  afterAll(() => opened.close());
  beforeEach(async () => {
    await db.kysely.deleteFrom('jobs').execute();
    await db.kysely.deleteFrom('webhook_attempts').execute();
    await db.kysely.deleteFrom('webhook_deliveries').execute();
  });

  /** A pending delivery at its first attempt, with that attempt's job claimed under LEASE. */
  async function claimedDelivery(id: string): Promise<{ delivery: DeliveryRow; jobId: string }> {
    const delivery: DeliveryRow = {
      id,
      account_id: 'acct_settle',
      livemode: 1,
      endpoint_id: 'we_settle',
      event_id: `evt_${id}`,
      event_type: 'intake.sent',
      payload: { id: `evt_${id}` },
      test: 0,
      status: 'pending',
      attempts: 0,
      next_attempt_at: at,
      lease_owner: null,
      lease_until: null,
      created_at: at,
      completed_at: null,
    };
    await insertDelivery(db.kysely, delivery);
    const jobId = await enqueueAttempt(db.kysely, delivery, 1, 0);
    await db.kysely
      .updateTable('jobs')
      .set({ locked_until: LEASE, attempts: 1 })
      .where('id', '=', jobId)
      .execute();
    return { delivery, jobId };
  }

  const attemptOf = (delivery: DeliveryRow): AttemptRow => ({
    id: `wha_${delivery.id}`,
    account_id: delivery.account_id,
    livemode: delivery.livemode,
    endpoint_id: delivery.endpoint_id,
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    attempt: 1,
    requested_at: at,
    duration_ms: 12,
    response_status: 200,
    response_excerpt: 'ok',
    error: null,
    outcome: 'succeeded',
    next_attempt_at: null,
  });

  const state = async (deliveryId: string, jobId: string) => ({
    job: await db.kysely.selectFrom('jobs').select('id').where('id', '=', jobId).executeTakeFirst(),
    delivery: await db.kysely
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempts', 'completed_at'])
      .where('id', '=', deliveryId)
      .executeTakeFirstOrThrow(),
    attempts: await db.kysely
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_id', '=', deliveryId)
      .execute(),
  });

  it('ends the job, settles the delivery and logs the attempt, typed as the table is', async () => {
    const { delivery, jobId } = await claimedDelivery('whd_settle_ok');
    const done = await settleAttemptInOne(
      db.kysely,
      { id: jobId, leases: [LEASE - 1, LEASE] },
      { id: delivery.id, attempt: 1 },
      { status: 'succeeded', completed_at: at },
      attemptOf(delivery),
    );
    expect(done).toEqual({ ended: true, settled: true });
    const after = await state(delivery.id, jobId);
    expect(after.job).toBeUndefined();
    expect(after.delivery).toEqual({ status: 'succeeded', attempts: 1, completed_at: at });
    expect(after.attempts).toEqual([attemptOf(delivery)]);
  });

  it('records nothing when the job carries another lease (taken over)', async () => {
    const { delivery, jobId } = await claimedDelivery('whd_settle_lost');
    const done = await settleAttemptInOne(
      db.kysely,
      { id: jobId, leases: [LEASE + 1] },
      { id: delivery.id, attempt: 1 },
      { status: 'succeeded', completed_at: at },
      attemptOf(delivery),
    );
    expect(done).toEqual({ ended: false, settled: false });
    const after = await state(delivery.id, jobId);
    expect(after.job?.id).toBe(jobId);
    expect(after.delivery).toEqual({ status: 'pending', attempts: 0, completed_at: null });
    expect(after.attempts).toEqual([]);
  });

  it('ends the job but logs nothing when the delivery was settled meanwhile', async () => {
    const { delivery, jobId } = await claimedDelivery('whd_settle_stale');
    await db.kysely
      .updateTable('webhook_deliveries')
      .set({ status: 'cancelled', completed_at: at })
      .where('id', '=', delivery.id)
      .execute();
    const done = await settleAttemptInOne(
      db.kysely,
      { id: jobId, leases: [LEASE] },
      { id: delivery.id, attempt: 1 },
      { status: 'failed', completed_at: at },
      attemptOf(delivery),
    );
    expect(done).toEqual({ ended: true, settled: false });
    const after = await state(delivery.id, jobId);
    expect(after.job).toBeUndefined();
    expect(after.delivery.status).toBe('cancelled');
    expect(after.attempts).toEqual([]);
  });
});
