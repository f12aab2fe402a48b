import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import { enqueueAttempt } from '../src/modules/webhooks/attempt.js';
import {
  insertDelivery,
  insertEndpoint,
  settleAttemptsInOne,
  type AttemptRow,
  type DeliveryRow,
} from '../src/modules/webhooks/webhooks.repository.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';
import { endpointRow } from './helpers/webhook-rows.js';

/**
 * The one-statement record of webhook attempts' final outcomes on PostgreSQL: for each attempt, each
 * part (the job's end under its lease, the delivery's final state, the log row) happens only if the
 * one before it did, whatever became of the other attempts in the statement.
 */
describe.runIf(DATABASES.includes('postgres'))('settleAttemptsInOne on postgres', () => {
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
    await insertEndpoint(
      db.kysely,
      endpointRow('we_settle', 'acct_settle', at, {
        url: 'https://example.com/hook',
        secret_ciphertext: 'sealed',
      }),
    );
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
    const [done] = await settleAttemptsInOne(db.kysely, [
      {
        job: { id: jobId, leases: [LEASE - 1, LEASE] },
        delivery: { id: delivery.id, attempt: 1 },
        patch: { status: 'succeeded', completed_at: at },
        row: attemptOf(delivery),
      },
    ]);
    expect(done).toEqual({ ended: true, settled: true });
    const after = await state(delivery.id, jobId);
    expect(after.job).toBeUndefined();
    expect(after.delivery).toEqual({ status: 'succeeded', attempts: 1, completed_at: at });
    expect(after.attempts).toEqual([attemptOf(delivery)]);
  });

  it('records nothing when the job carries another lease (taken over)', async () => {
    const { delivery, jobId } = await claimedDelivery('whd_settle_lost');
    const [done] = await settleAttemptsInOne(db.kysely, [
      {
        job: { id: jobId, leases: [LEASE + 1] },
        delivery: { id: delivery.id, attempt: 1 },
        patch: { status: 'succeeded', completed_at: at },
        row: attemptOf(delivery),
      },
    ]);
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
    const [done] = await settleAttemptsInOne(db.kysely, [
      {
        job: { id: jobId, leases: [LEASE] },
        delivery: { id: delivery.id, attempt: 1 },
        patch: { status: 'failed', completed_at: at },
        row: attemptOf(delivery),
      },
    ]);
    expect(done).toEqual({ ended: true, settled: false });
    const after = await state(delivery.id, jobId);
    expect(after.job).toBeUndefined();
    expect(after.delivery.status).toBe('cancelled');
    expect(after.attempts).toEqual([]);
  });
  it('records several outcomes in one statement, each on its own terms', async () => {
    const ok = await claimedDelivery('whd_batch_ok');
    const renewing = await claimedDelivery('whd_batch_renewing');
    const lost = await claimedDelivery('whd_batch_lost');
    const stale = await claimedDelivery('whd_batch_stale');
    // A renewal landed while the outcome was taken: the row carries the second of the fence's leases.
    await db.kysely
      .updateTable('jobs')
      .set({ locked_until: LEASE + 5 })
      .where('id', '=', renewing.jobId)
      .execute();
    await db.kysely
      .updateTable('webhook_deliveries')
      .set({ status: 'cancelled', completed_at: at })
      .where('id', '=', stale.delivery.id)
      .execute();
    const failedRow = {
      ...attemptOf(renewing.delivery),
      response_status: 500,
      outcome: 'failed',
      error: "it's 'quoted', {braced}, \\ and \"double\"",
    };
    const settle = (
      { delivery, jobId }: { delivery: DeliveryRow; jobId: string },
      leases: number[],
      status: 'succeeded' | 'failed',
      row = attemptOf(delivery),
    ) => ({
      job: { id: jobId, leases },
      delivery: { id: delivery.id, attempt: 1 },
      patch: { status, completed_at: at },
      row,
    });
    const done = await settleAttemptsInOne(db.kysely, [
      settle(ok, [LEASE], 'succeeded'),
      settle(renewing, [LEASE, LEASE + 5], 'failed', failedRow),
      settle(lost, [LEASE + 1], 'succeeded'),
      settle(stale, [LEASE], 'succeeded'),
    ]);
    expect(done).toEqual([
      { ended: true, settled: true },
      { ended: true, settled: true },
      { ended: false, settled: false },
      { ended: true, settled: false },
    ]);
    expect(await state(ok.delivery.id, ok.jobId)).toEqual({
      job: undefined,
      delivery: { status: 'succeeded', attempts: 1, completed_at: at },
      attempts: [attemptOf(ok.delivery)],
    });
    expect(await state(renewing.delivery.id, renewing.jobId)).toEqual({
      job: undefined,
      delivery: { status: 'failed', attempts: 1, completed_at: at },
      attempts: [failedRow],
    });
    const afterLost = await state(lost.delivery.id, lost.jobId);
    expect(afterLost.job?.id).toBe(lost.jobId);
    expect(afterLost.delivery).toEqual({ status: 'pending', attempts: 0, completed_at: null });
    expect(afterLost.attempts).toEqual([]);
    const afterStale = await state(stale.delivery.id, stale.jobId);
    expect(afterStale.job).toBeUndefined();
    expect(afterStale.delivery.status).toBe('cancelled');
    expect(afterStale.attempts).toEqual([]);
  });
});
