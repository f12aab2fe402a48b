import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { newId } from '../../lib/ids.js';
import { fanOutEvent } from '../webhooks/webhooks.outbox.js';

export interface DomainEvent {
  accountId: string;
  livemode: boolean;
  type: string;
  intakeId: string | null;
  /** The event's own fields beyond id, event, intake_id, occurred_at and livemode. */
  data: Record<string, unknown>;
  occurredAt: string;
}

/**
 * Records an event in the caller's transaction (transactional outbox): the state change and its
 * event commit together, and delivery to webhooks happens afterwards from this table.
 */
export async function recordEvent(db: Kysely<Database>, event: DomainEvent): Promise<string> {
  const id = newId('evt');
  const payload = {
    id,
    event: event.type,
    intake_id: event.intakeId,
    occurred_at: event.occurredAt,
    livemode: event.livemode,
    ...event.data,
  };
  await db
    .insertInto('events')
    .values({
      id,
      account_id: event.accountId,
      livemode: event.livemode ? 1 : 0,
      type: event.type,
      intake_id: event.intakeId,
      payload: JSON.stringify(payload),
      occurred_at: event.occurredAt,
    })
    .execute();
  // Its webhook deliveries, in the same transaction: a committed event always has them.
  await fanOutEvent(db, { id, ...event, payload });
  return id;
}

/** Records an intake's event in the caller's transaction, timed by the intake's world clock. */
export async function emitIntakeEvent(
  db: Kysely<Database>,
  world: { accountId: string; livemode: boolean; clock: { now(): Date } },
  intake: { id: string },
  type: string,
  data: Record<string, unknown>,
): Promise<void> {
  await recordEvent(db, {
    accountId: world.accountId,
    livemode: world.livemode,
    type,
    intakeId: intake.id,
    data,
    occurredAt: world.clock.now().toISOString(),
  });
}
