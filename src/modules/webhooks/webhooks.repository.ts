import { sql, type Kysely, type Selectable } from 'kysely';
import type {
  Database,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookDeliveryStatus,
  WebhookEndpointsTable,
} from '../../db/schema.js';
import type { EndpointFormat } from './webhooks.format.js';

/** The fields of a delivery that will not be attempted again. */
function cancelled(at: string) {
  return {
    status: 'cancelled',
    completed_at: at,
    next_attempt_at: null,
    lease_owner: null,
    lease_until: null,
  } as const;
}

type StoredEndpoint = Selectable<WebhookEndpointsTable>;
type StoredDelivery = Selectable<WebhookDeliveriesTable>;

/** An endpoint as the module sees it: its subscribed events parsed, its format and status typed. */
export type EndpointRow = Omit<StoredEndpoint, 'events' | 'format' | 'status'> & {
  events: string[];
  format: EndpointFormat;
  status: 'enabled' | 'disabled';
};

/** A delivery with its event payload parsed. */
export type DeliveryRow = Omit<StoredDelivery, 'payload'> & { payload: Record<string, unknown> };

// The JSON columns are parsed here when read and serialised here when written, nowhere else.
function endpointOf(row: StoredEndpoint): EndpointRow {
  return {
    ...row,
    events: JSON.parse(row.events) as string[],
    format: row.format as EndpointFormat,
    status: row.status === 'enabled' ? 'enabled' : 'disabled',
  };
}

function storedEndpoint<T extends Partial<EndpointRow>>({ events, ...rest }: T) {
  return { ...rest, ...(events === undefined ? {} : { events: JSON.stringify(events) }) };
}

const deliveryOf = (row: StoredDelivery): DeliveryRow => ({
  ...row,
  payload: JSON.parse(row.payload) as Record<string, unknown>,
});
export type AttemptRow = Selectable<WebhookAttemptsTable>;

/** An account in one mode: every query of a tenant's webhooks is scoped by it. */
export interface Tenant {
  accountId: string;
  livemode: boolean;
}

const mode = (tenant: Tenant) => (tenant.livemode ? 1 : 0);

// ---- endpoints ----

export async function insertEndpoint(db: Kysely<Database>, row: EndpointRow): Promise<void> {
  await db
    .insertInto('webhook_endpoints')
    .values({ ...row, events: JSON.stringify(row.events) })
    .execute();
}

export async function listEndpoints(db: Kysely<Database>, tenant: Tenant): Promise<EndpointRow[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', mode(tenant))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(endpointOf);
}

export async function findEndpoint(
  db: Kysely<Database>,
  tenant: Tenant,
  id: string,
): Promise<EndpointRow | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', mode(tenant))
    .where('id', '=', id)
    .executeTakeFirst();
  return row && endpointOf(row);
}

export async function findEndpointById(db: Kysely<Database>, id: string): Promise<EndpointRow | undefined> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  return row && endpointOf(row);
}

/** Endpoints by id, in one statement (attempts starting together, see BatchLoader). */
export async function findEndpointsByIds(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, EndpointRow>> {
  const rows = await db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, endpointOf(row)]));
}

export async function countEnabledEndpoints(db: Kysely<Database>, tenant: Tenant): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', mode(tenant))
    .where('status', '=', 'enabled')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The enabled endpoints of a tenant: the fan-out of each event picks the subscribed ones among them. */
export async function enabledEndpoints(db: Kysely<Database>, tenant: Tenant): Promise<EndpointRow[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', mode(tenant))
    .where('status', '=', 'enabled')
    .execute();
  return rows.map(endpointOf);
}

export async function updateEndpoint(
  db: Kysely<Database>,
  id: string,
  patch: Partial<Omit<EndpointRow, 'id' | 'account_id' | 'livemode'>>,
): Promise<void> {
  await db.updateTable('webhook_endpoints').set(storedEndpoint(patch)).where('id', '=', id).execute();
}

/** The ids of an endpoint's deliveries (their attempt jobs are about them). */
export async function deliveryIdsOfEndpoint(db: Kysely<Database>, endpointId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('endpoint_id', '=', endpointId)
    .execute();
  return rows.map((r) => r.id);
}

/** Removes an endpoint with its deliveries and their log (cascade). */
export async function deleteEndpoint(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

/**
 * HTTP 410: every enabled endpoint of the tenant with this URL is disabled, and their pending
 * deliveries are cancelled. Returns the endpoints disabled and the deliveries cancelled (whose
 * attempt jobs the caller cancels).
 */
export async function deregisterUrl(
  db: Kysely<Database>,
  tenant: Tenant,
  url: string,
  at: string,
): Promise<{ endpointIds: string[]; deliveryIds: string[] }> {
  const endpoints = await db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', mode(tenant))
    .where('url', '=', url)
    .where('status', '=', 'enabled')
    .execute();
  const ids = endpoints.map((e) => e.id);
  if (ids.length === 0) return { endpointIds: [], deliveryIds: [] };
  await db
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: 'gone', disabled_at: at, updated_at: at })
    .where('id', 'in', ids)
    .execute();
  const pending = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('endpoint_id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
  await db
    .updateTable('webhook_deliveries')
    .set(cancelled(at))
    .where('endpoint_id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
  return { endpointIds: ids, deliveryIds: pending.map((r) => r.id) };
}

// ---- deliveries ----

export async function insertDelivery(db: Kysely<Database>, row: DeliveryRow): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({ ...row, payload: JSON.stringify(row.payload) })
    .execute();
}

/** Deliveries by id, in one statement (attempts starting together, see BatchLoader). */
export async function findDeliveries(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, DeliveryRow>> {
  const rows = await db.selectFrom('webhook_deliveries').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, deliveryOf(row)]));
}

/**
 * Records the end of an attempt on the delivery, fenced: only while it is still pending at this
 * attempt (the attempt's job holds the lease, so this is a guard against a stale job). Returns false
 * when it is not.
 */
export async function settleDelivery(
  db: Kysely<Database>,
  fence: { id: string; attempt: number },
  patch: { status: WebhookDeliveryStatus; next_attempt_at: string | null; completed_at: string | null },
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ ...patch, attempts: fence.attempt })
    .where('id', '=', fence.id)
    .where('attempts', '=', fence.attempt - 1)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function cancelDelivery(db: Kysely<Database>, id: string, at: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set(cancelled(at))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

// ---- attempts (the delivery log) ----

export async function insertAttempt(db: Kysely<Database>, row: AttemptRow): Promise<void> {
  await db.insertInto('webhook_attempts').values(row).execute();
}

/** The attempt log's columns with their PostgreSQL types, for settleAttemptInOne's typed VALUES. */
const ATTEMPT_COLUMNS = [
  ['id', 'text'],
  ['account_id', 'text'],
  ['livemode', 'integer'],
  ['endpoint_id', 'text'],
  ['delivery_id', 'text'],
  ['event_id', 'text'],
  ['event_type', 'text'],
  ['attempt', 'integer'],
  ['requested_at', 'text'],
  ['duration_ms', 'integer'],
  ['response_status', 'integer'],
  ['response_excerpt', 'text'],
  ['error', 'text'],
  ['outcome', 'text'],
  ['next_attempt_at', 'text'],
] as const satisfies readonly (readonly [keyof AttemptRow, 'text' | 'integer'])[];
// Every column of the table is listed: a column added to the log and not here fails to compile.
const everyAttemptColumn: Record<Exclude<keyof AttemptRow, (typeof ATTEMPT_COLUMNS)[number][0]>, never> = {};
void everyAttemptColumn;

/**
 * PostgreSQL only: the end of an attempt's job, the delivery's final state (succeeded, or failed for
 * good) and the attempt's log row in one statement, one round trip instead of a transaction's five.
 * Each part happens only if the one before it did: the job's row is deleted where this worker's lease
 * is still on it (`job`), the delivery settled only then and only if still pending at this attempt,
 * and the log row written only then. `ended` false: the job was not this worker's any more and
 * nothing was recorded; `settled` false: the delivery had been settled meanwhile (the job is ended).
 */
export async function settleAttemptInOne(
  db: Kysely<Database>,
  job: { id: string; leases: readonly number[] },
  fence: { id: string; attempt: number },
  patch: { status: 'succeeded' | 'failed'; completed_at: string },
  row: AttemptRow,
): Promise<{ ended: boolean; settled: boolean }> {
  const values = ATTEMPT_COLUMNS.map(([column, type]) => sql`cast(${row[column]} as ${sql.raw(type)})`);
  const columns = ATTEMPT_COLUMNS.map(([column]) => sql.id(column));
  const result = await sql<{ ended: number; settled: number }>`
    with ended as (
      delete from jobs where id = ${job.id} and locked_until in (${sql.join([...job.leases])}) returning id
    ), settled as (
      update webhook_deliveries
      set status = ${patch.status}, next_attempt_at = null, completed_at = ${patch.completed_at},
          attempts = ${fence.attempt}
      where id = ${fence.id} and attempts = ${fence.attempt - 1} and status = 'pending'
        and exists (select 1 from ended)
      returning id
    ), logged as (
      insert into webhook_attempts (${sql.join(columns)})
      select * from (values (${sql.join(values)})) as attempt
      where exists (select 1 from settled)
      returning id
    )
    select (select count(*) from ended)::int as ended, (select count(*) from logged)::int as settled`.execute(
    db,
  );
  const counts = result.rows[0];
  return { ended: (counts?.ended ?? 0) > 0, settled: (counts?.settled ?? 0) > 0 };
}

export type AttemptWithStatus = AttemptRow & { delivery_status: string; test: number };

/**
 * Newest first, paged by attempt id like the audit log: attempts after the cursor are older,
 * ordered by (requested_at, id) so attempts of the same millisecond page without gaps or repeats.
 */
export async function listAttempts(
  db: Kysely<Database>,
  tenant: Tenant,
  endpointId: string,
  page: { limit: number; startingAfter: string | undefined; deliveryId: string | undefined },
): Promise<{ rows: AttemptWithStatus[]; cursorFound: boolean }> {
  let query = db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .selectAll('a')
    .select(['d.status as delivery_status', 'd.test as test'])
    .where('a.account_id', '=', tenant.accountId)
    .where('a.livemode', '=', mode(tenant))
    .where('a.endpoint_id', '=', endpointId);
  if (page.deliveryId) query = query.where('a.delivery_id', '=', page.deliveryId);
  if (page.startingAfter) {
    const cursor = await db
      .selectFrom('webhook_attempts')
      .select(['requested_at', 'id'])
      .where('account_id', '=', tenant.accountId)
      .where('livemode', '=', mode(tenant))
      .where('endpoint_id', '=', endpointId)
      .where('id', '=', page.startingAfter)
      .executeTakeFirst();
    if (!cursor) return { rows: [], cursorFound: false };
    query = query.where((eb) =>
      eb.or([
        eb('a.requested_at', '<', cursor.requested_at),
        eb.and([eb('a.requested_at', '=', cursor.requested_at), eb('a.id', '<', cursor.id)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('a.requested_at', 'desc')
    .orderBy('a.id', 'desc')
    .limit(page.limit + 1)
    .execute();
  return { rows, cursorFound: true };
}

/** Retention: attempt logs requested before the cutoff (ISO), of every account. Returns how many. */
export async function deleteAttemptsBefore(db: Kysely<Database>, cutoffIso: string): Promise<number> {
  const result = await db
    .deleteFrom('webhook_attempts')
    .where('requested_at', '<', cutoffIso)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Retention: deliveries that ended (succeeded, failed, cancelled) before the cutoff (ISO), with their
 * attempts (cascade). A pending delivery stays whatever its age. Returns how many.
 */
export async function deleteFinishedDeliveriesBefore(
  db: Kysely<Database>,
  cutoffIso: string,
): Promise<number> {
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where('status', '!=', 'pending')
    .where('completed_at', '<', cutoffIso)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
