import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { RecordedEvent } from '../../kernel/public-events.js';
import { systemClock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { enqueueAttempt } from './attempt.js';
import { enabledEndpoints, insertDelivery } from './webhooks.repository.js';

/**
 * Fans a just-recorded event out to the tenant's enabled endpoints subscribed to its type, in the
 * transaction that records the event (transactional outbox): one delivery row per endpoint and its
 * first attempt, due at once. An event committed is never without its deliveries, and an endpoint
 * registered after the event's transaction does not receive it. Any event type works: the
 * subscription decides, so events of modules added later need nothing here.
 */
export async function fanOutEvent(db: Kysely<Database>, event: RecordedEvent): Promise<number> {
  const tenant = { accountId: event.accountId, livemode: event.livemode };
  const endpoints = (await enabledEndpoints(db, tenant)).filter((endpoint) =>
    endpoint.events.includes(event.type),
  );
  if (endpoints.length === 0) return 0;
  const payload = event.payload;
  // "As soon as possible" in real time (job due times are real epoch ms in both modes).
  const dueAt = systemClock.now().getTime();
  for (const endpoint of endpoints) {
    const delivery = {
      id: newId('whd'),
      account_id: event.accountId,
      livemode: event.livemode ? 1 : 0,
      endpoint_id: endpoint.id,
      event_id: event.id,
      event_type: event.type,
      payload,
      test: 0,
      status: 'pending' as const,
      attempts: 0,
      next_attempt_at: event.occurredAt,
      lease_owner: null,
      lease_until: null,
      created_at: event.occurredAt,
      completed_at: null,
    };
    await insertDelivery(db, delivery);
    await enqueueAttempt(db, delivery, 1, dueAt);
  }
  return endpoints.length;
}
