import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/**
 * Domain events: what a module tells the rest of the service after it changed its rows, raised inside
 * the change's own transaction. Subscribers (registered once, at the composition root) turn an event
 * into work in that same transaction: reminder plans, queued messages, webhook deliveries, history.
 * So a change and everything it causes commit together or not at all, and the module that raises an
 * event knows nothing of who listens.
 *
 * Each module declares the events it raises by merging into `DomainEventMap`:
 *
 *   declare module '../../kernel/domain-events.js' {
 *     interface DomainEventMap { 'recipients.changed': { world: World; intakeId: string } }
 *   }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface DomainEventMap {}

export type DomainEventName = keyof DomainEventMap;

/** Runs in the raising transaction: a throw rolls the whole change back. */
export type Subscriber<N extends DomainEventName> = (
  trx: Kysely<Database>,
  event: DomainEventMap[N],
) => Promise<void>;

type AnySubscriber = (trx: Kysely<Database>, event: unknown) => Promise<void>;

const subscribers = new Map<string, AnySubscriber[]>();
/** Registers a subscriber (composition root only). Subscribers of one event run in registration order. */
export function subscribe<N extends DomainEventName>(name: N, subscriber: Subscriber<N>): void {
  const list = subscribers.get(name) ?? [];
  list.push(subscriber as AnySubscriber);
  subscribers.set(name, list);
}

/** Raises an event in the caller's transaction: each subscriber runs in turn, awaited. */
export async function raise<N extends DomainEventName>(
  trx: Kysely<Database>,
  name: N,
  event: DomainEventMap[N],
): Promise<void> {
  const list = subscribers.get(name);
  // A process that forgot to wire its subscribers fails loudly rather than dropping reminders or deliveries.
  if (!list || list.length === 0) {
    throw new Error(`No subscriber for domain event "${name}": the composition root did not wire it`);
  }
  for (const subscriber of list) await subscriber(trx, event);
}
