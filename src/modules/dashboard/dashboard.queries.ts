import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { IntakeRow, ItemRow } from '../intakes/intakes.repository.js';
import type { World } from '../../kernel/world.js';

/**
 * Reads the dashboard needs beyond the API's listings (search over several columns, progress of many
 * intakes at once, an intake's event history, filtered audit). Every query filters account and mode.
 */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (ch) => `\\${ch}`);
}

export async function searchIntakes(
  db: Kysely<Database>,
  world: World,
  filters: { status?: string | undefined; q?: string | undefined; limit: number; offset: number },
): Promise<{ total: number; rows: IntakeRow[] }> {
  let query = db
    .selectFrom('intakes')
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0);
  if (filters.status) query = query.where('status', '=', filters.status);
  const q = filters.q?.trim().toLowerCase();
  if (q) {
    const like = `%${escapeLike(q)}%`;
    query = query.where((eb) =>
      eb.or([
        eb(sql`lower(project_name)`, 'like', sql`${like} escape '\\'`),
        eb(sql`lower(client_email)`, 'like', sql`${like} escape '\\'`),
        eb(sql`lower(coalesce(client_name, ''))`, 'like', sql`${like} escape '\\'`),
      ]),
    );
  }
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    query
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filters.limit)
      .offset(filters.offset)
      .execute(),
  ]);
  return { total: Number(count.n), rows };
}

export async function itemsOfIntakes(db: Kysely<Database>, world: World, ids: string[]): Promise<ItemRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('intake_items')
    .selectAll()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('intake_id', 'in', ids)
    .orderBy('position')
    .execute();
}

export async function eventsOfIntake(db: Kysely<Database>, world: World, intakeId: string) {
  return db
    .selectFrom('events')
    .select(['id', 'type', 'occurred_at', 'payload'])
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(200)
    .execute();
}

export async function filesOfIntake(db: Kysely<Database>, world: World, intakeId: string) {
  return db
    .selectFrom('item_files')
    .selectAll()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .orderBy('created_at')
    .execute();
}

/** Intakes created per day (UTC) since `sinceIso`, for the usage chart. */
export async function intakesPerDay(
  db: Kysely<Database>,
  world: World,
  sinceIso: string,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('intakes')
    .select(['created_at'])
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('created_at', '>=', sinceIso)
    .execute();
  const perDay = new Map<string, number>();
  for (const row of rows) {
    const day = row.created_at.slice(0, 10);
    perDay.set(day, (perDay.get(day) ?? 0) + 1);
  }
  return perDay;
}

export interface AuditFilters {
  action?: string | undefined;
  actorType?: string | undefined;
  limit: number;
  offset: number;
}

export async function auditPage(db: Kysely<Database>, world: World, filters: AuditFilters) {
  let query = db
    .selectFrom('audit_entries')
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0);
  if (filters.action) query = query.where('action', 'like', `${escapeLike(filters.action)}%`);
  if (filters.actorType) query = query.where('actor_type', '=', filters.actorType);
  const rows = await query
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .offset(filters.offset)
    .execute();
  return { rows: rows.slice(0, filters.limit), hasMore: rows.length > filters.limit };
}

export async function distinctAuditActions(db: Kysely<Database>, world: World): Promise<string[]> {
  const rows = await db
    .selectFrom('audit_entries')
    .select('action')
    .distinct()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .orderBy('action')
    .limit(200)
    .execute();
  return rows.map((r) => r.action);
}
