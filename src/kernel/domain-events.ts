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
 *     interface DomainEventMap { recipientsChanged: { world: World; intakeId: string } }
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

/**
 * Questions: what a module needs from a module above it (one that depends on it), answered by exactly
 * one function registered at the composition root. They keep the dependency one-way: the intakes
 * module asks for its reminders' status without importing the chases module.
 * Declared like events, by merging: `interface DomainQueryMap { 'name': { input: I; output: O } }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface DomainQueryMap {}

export type DomainQueryName = keyof DomainQueryMap;
type QueryShape = { input: unknown; output: unknown };
type InputOf<N extends DomainQueryName> = DomainQueryMap[N] extends QueryShape
  ? DomainQueryMap[N]['input']
  : never;
type OutputOf<N extends DomainQueryName> = DomainQueryMap[N] extends QueryShape
  ? DomainQueryMap[N]['output']
  : never;

const answerers = new Map<string, (db: Kysely<Database>, input: unknown) => Promise<unknown>>();

/** Registers the one answer to a question (composition root only); a second one throws. */
export function answer<N extends DomainQueryName>(
  name: N,
  answerer: (db: Kysely<Database>, input: InputOf<N>) => Promise<OutputOf<N>>,
): void {
  if (answerers.has(name)) throw new Error(`Question "${name}" already has an answer`);
  answerers.set(name, answerer as (db: Kysely<Database>, input: unknown) => Promise<unknown>);
}

/** Asks a question, in the caller's transaction or outside one, as `db` is. */
export async function ask<N extends DomainQueryName>(
  db: Kysely<Database>,
  name: N,
  input: InputOf<N>,
): Promise<OutputOf<N>> {
  const answerer = answerers.get(name);
  if (!answerer) throw new Error(`No answer for question "${name}": the composition root did not wire it`);
  return (await answerer(db, input)) as OutputOf<N>;
}
