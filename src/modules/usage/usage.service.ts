import { ask } from '../../kernel/domain-events.js';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { preparedQuery } from '../../db/prepared.js';
import { planOf } from '../../domain/plans.js';

/** Monthly metrics are counted per year-month; storage is a running total (period "all"). */
export type UsageMetric = 'intakes' | 'sms_messages' | 'storage_bytes';
const RUNNING_TOTAL = 'all';

export function periodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

function periodFor(metric: UsageMetric, at: Date): string {
  return metric === 'storage_bytes' ? RUNNING_TOTAL : periodOf(at);
}

export interface UsageWorld {
  accountId: string;
  livemode: boolean;
}

/** Adds `delta` (may be negative for storage) inside the caller's transaction. */
export async function addUsage(
  db: Kysely<Database>,
  world: UsageWorld,
  metric: UsageMetric,
  delta: number,
  at: Date,
): Promise<void> {
  await addUsageAndRead(db, world, metric, delta, at);
}

/**
 * Adds `delta` like addUsage and returns the counter's new value from the same statement (SQLite and
 * PostgreSQL both return the row an upsert wrote): a quota check needs no second read.
 */
export async function addUsageAndRead(
  db: Kysely<Database>,
  world: UsageWorld,
  metric: UsageMetric,
  delta: number,
  at: Date,
): Promise<number> {
  const livemode = world.livemode ? 1 : 0;
  const [row] = await upsertCounter(
    db,
    world.accountId,
    livemode,
    periodFor(metric, at),
    metric,
    delta,
    delta,
  );
  if (!row) throw new Error(`The ${metric} counter's upsert returned no row`);
  return Number(row.value);
}

// Every intake's creation counts itself (and checks its quota with the count): compiled once.
const upsertCounter = preparedQuery(
  (
    db: Kysely<Database>,
    accountId: string,
    livemode: number,
    period: string,
    metric: string,
    value: number,
    delta: number,
  ) =>
    db
      .insertInto('usage_counters')
      .values({ account_id: accountId, livemode, period, metric, value })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'livemode', 'period', 'metric'])
          .doUpdateSet({ value: sql<number>`usage_counters.value + ${delta}` }),
      )
      .returning('value'),
  ['account', 10, 'period', 'metric', 11, 12],
);

export async function usageValue(
  db: Kysely<Database>,
  world: UsageWorld,
  metric: UsageMetric,
  at: Date,
): Promise<number> {
  const row = await db
    .selectFrom('usage_counters')
    .select('value')
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('period', '=', periodFor(metric, at))
    .where('metric', '=', metric)
    .executeTakeFirst();
  return Number(row?.value ?? 0);
}

declare module '../../kernel/domain-events.js' {
  interface DomainQueryMap {
    /** How many of the plan's seats the account's people take (the members live above this module). */
    seatsUsed: { input: { accountId: string }; output: number };
  }
}

export interface UsageRecord {
  period: string;
  seats: { used: number; limit: number };
  intakes: { used: number; limit: number };
  storage_bytes: { used: number; limit: number };
  sms_messages: { used: number; limit: number };
}

export async function usageRecord(
  db: Kysely<Database>,
  world: UsageWorld,
  plan: string,
  at: Date,
): Promise<UsageRecord> {
  const quotas = planOf(plan).quotas;
  const [intakes, storage, sms, seats] = await Promise.all([
    usageValue(db, world, 'intakes', at),
    usageValue(db, world, 'storage_bytes', at),
    usageValue(db, world, 'sms_messages', at),
    ask(db, 'seatsUsed', { accountId: world.accountId }),
  ]);
  return {
    period: periodOf(at),
    seats: { used: seats, limit: quotas.seats },
    intakes: { used: intakes, limit: quotas.intakes_per_month },
    storage_bytes: { used: storage, limit: quotas.storage_bytes },
    sms_messages: { used: sms, limit: quotas.sms_per_month },
  };
}
