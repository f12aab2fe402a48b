import { sql, type Kysely, type Selectable } from 'kysely';
import type { AuditEntriesTable, Database } from '../../db/schema.js';
import type { World } from '../../kernel/world.js';
import { newId } from '../../lib/ids.js';
import { preparedInsert } from '../../db/prepared.js';

export type AuditRow = Selectable<AuditEntriesTable>;
/** `person_id` may be left out: an entry written by the system or for a key with no person. */
export type NewAuditEntry = Omit<AuditRow, 'id' | 'person_id'> & { person_id?: string | null };

// Every audited request writes one: compiled once.
const insertAuditEntries = preparedInsert(
  'audit_entries',
  [
    'id',
    'account_id',
    'livemode',
    'action',
    'resource_type',
    'resource_id',
    'actor_type',
    'actor_id',
    'person_id',
    'request_id',
    'created_at',
  ],
  { deferrable: true },
);

export async function insertAuditEntry(db: Kysely<Database>, entry: NewAuditEntry): Promise<void> {
  await insertAuditEntries(db, [{ id: newId('aud'), ...entry, person_id: entry.person_id ?? null }]);
}

/**
 * Newest first. The cursor is an entry id; entries after it are older, ordered by (created_at, id)
 * so that entries written in the same millisecond still page without gaps or repeats.
 */
export async function listAuditEntries(
  db: Kysely<Database>,
  world: { accountId: string; livemode: number },
  page: { limit: number; startingAfter: string | undefined },
): Promise<{ rows: AuditRow[]; cursorFound: boolean }> {
  let query = db
    .selectFrom('audit_entries')
    .selectAll()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode);
  if (page.startingAfter) {
    const cursor = await db
      .selectFrom('audit_entries')
      .select(['created_at', 'id'])
      .where('account_id', '=', world.accountId)
      .where('livemode', '=', world.livemode)
      .where('id', '=', page.startingAfter)
      .executeTakeFirst();
    if (!cursor) return { rows: [], cursorFound: false };
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', cursor.created_at),
        eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
  return { rows, cursorFound: true };
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
  if (filters.action)
    query = query.where('action', 'like', `${filters.action.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`);
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

/** The most actions the audit log's filter offers. */
const MOST_ACTIONS = 200;

/**
 * The actions the world's audit log holds, in order (at most MOST_ACTIONS), for the log's filter: a
 * loose walk of the (account, mode, action) index (migration 0048), each action the least one past the
 * last, so its cost grows with the number of actions, not with the entries (a `select distinct` read
 * them all).
 */
export async function distinctAuditActions(db: Kysely<Database>, world: World): Promise<string[]> {
  const inWorld = sql`account_id = ${world.accountId} and livemode = ${world.livemode ? 1 : 0}`;
  const found = await sql<{ action: string }>`with recursive actions (action, n) as (
      select (select min(action) from audit_entries where ${inWorld}), 1
      union all
      select (select min(action) from audit_entries where ${inWorld} and action > actions.action), n + 1
      from actions where actions.action is not null and n < ${MOST_ACTIONS}
    )
    select action from actions where action is not null`.execute(db);
  return found.rows.map((r) => r.action);
}
