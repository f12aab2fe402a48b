import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { raise } from './domain-events.js';

/** An event of the public API (SPEC's webhook events), before it is recorded. */
export interface PublicEvent {
  accountId: string;
  livemode: boolean;
  type: string;
  intakeId: string | null;
  /** The event's own fields beyond id, event, intake_id, occurred_at and livemode. */
  data: Record<string, unknown>;
  occurredAt: string;
}

/** A public event as recorded in the outbox: its id and the payload webhooks receive. */
export interface RecordedEvent {
  id: string;
  accountId: string;
  livemode: boolean;
  type: string;
  payload: Record<string, unknown>;
  occurredAt: string;
}

declare module './domain-events.js' {
  interface DomainEventMap {
    /** A public event happened: it is recorded (events module), then delivered (webhooks). */
    publicEventEmitted: PublicEvent;
    /** A public event was written to the outbox with its id. */
    publicEventRecorded: RecordedEvent;
  }
}

/** Emits a public event in the caller's transaction: it is recorded and fanned out to webhooks with it. */
export async function emitEvent(trx: Kysely<Database>, event: PublicEvent): Promise<void> {
  await raise(trx, 'publicEventEmitted', event);
}

/** Emits an intake's public event in the caller's transaction, timed by the intake's world clock. */
export async function emitIntakeEvent(
  trx: Kysely<Database>,
  world: { accountId: string; livemode: boolean; clock: { now(): Date } },
  intake: { id: string },
  type: string,
  data: Record<string, unknown>,
): Promise<void> {
  await emitEvent(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    type,
    intakeId: intake.id,
    data,
    occurredAt: world.clock.now().toISOString(),
  });
}
