import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { raise } from '../../kernel/domain-events.js';
import type { PublicEvent } from '../../kernel/public-events.js';
import { isOfWorld, type World } from '../../kernel/world.js';
import { newId } from '../../lib/ids.js';
import { preparedInsert } from '../../db/prepared.js';

// Every change that has a public event writes one: compiled once.
const insertEvents = preparedInsert(
  'events',
  ['id', 'account_id', 'livemode', 'type', 'intake_id', 'payload', 'occurred_at'],
  { deferrable: true },
);

/**
 * Records a public event in the caller's transaction (transactional outbox): the state change and its
 * event commit together, and whoever delivers events (webhooks) hears `event.recorded` in the same
 * transaction.
 */
export async function recordEvent(db: Kysely<Database>, event: PublicEvent): Promise<string> {
  const id = newId('evt');
  const payload = {
    id,
    event: event.type,
    intake_id: event.intakeId,
    occurred_at: event.occurredAt,
    livemode: event.livemode,
    ...event.data,
  };
  await insertEvents(db, [
    {
      id,
      account_id: event.accountId,
      livemode: event.livemode ? 1 : 0,
      type: event.type,
      intake_id: event.intakeId,
      payload: JSON.stringify(payload),
      occurred_at: event.occurredAt,
    },
  ]);
  await raise(db, 'publicEventRecorded', {
    id,
    accountId: event.accountId,
    livemode: event.livemode,
    type: event.type,
    payload,
    occurredAt: event.occurredAt,
  });
  return id;
}

/**
 * An intake's recorded events, newest first (at most 200): a range of the intake's own index
 * (migration 0047), read by the intake alone. With the account and mode in the statement a planner
 * could walk the account's events instead (the index that starts with them, in time order), past every
 * other intake's. An intake's events are its account's and mode's; each row is checked against the
 * world all the same.
 */
export async function eventsOfIntake(db: Kysely<Database>, world: World, intakeId: string) {
  const rows = await db
    .selectFrom('events')
    .select(['id', 'type', 'occurred_at', 'payload', 'account_id', 'livemode'])
    .where('intake_id', '=', intakeId)
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(200)
    .execute();
  return rows
    .filter((r) => isOfWorld(r, world))
    .map(({ id, type, occurred_at, payload }) => ({ id, type, occurred_at, payload }));
}
