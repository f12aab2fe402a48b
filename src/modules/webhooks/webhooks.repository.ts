import { sql, type Kysely, type Selectable } from 'kysely';
import type {
  Database,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookDeliveryStatus,
  WebhookEndpointsTable,
} from '../../db/schema.js';
import type { EndpointFormat } from './webhooks.format.js';
import { preparedInsert, preparedListQuery, preparedQuery } from '../../db/prepared.js';

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
  const rows = await selectEnabledEndpoints(db, tenant.accountId, mode(tenant));
  return rows.map(endpointOf);
}

// Every event recorded looks for its endpoints: compiled once.
const selectEnabledEndpoints = preparedQuery(
  (db: Kysely<Database>, accountId: string, livemode: number) =>
    db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('livemode', '=', livemode)
      .where('status', '=', sql.lit('enabled')),
  ['account', -1],
);

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
  await insertDeliveryRows(db, [{ ...row, payload: JSON.stringify(row.payload) }]);
}

// Every event's fan-out writes one per subscribed endpoint: compiled once for a delivery's columns, and
// on PostgreSQL sent with the transaction's next statement.
const insertDeliveryRows = preparedInsert(
  'webhook_deliveries',
  [
    'id',
    'account_id',
    'livemode',
    'endpoint_id',
    'event_id',
    'event_type',
    'payload',
    'test',
    'status',
    'attempts',
    'next_attempt_at',
    'lease_owner',
    'lease_until',
    'created_at',
    'completed_at',
  ],
  { deferrable: true },
);

/** A delivery with its endpoint, as an attempt reads them (undefined: the endpoint is gone). */
export interface DeliveryToAttempt {
  delivery: DeliveryRow;
  endpoint: EndpointRow | undefined;
}

/** The endpoint's columns, read beside a delivery under these names (`e_id`, `e_url`, …). */
const ENDPOINT_COLUMNS = [
  'id',
  'account_id',
  'livemode',
  'url',
  'events',
  'format',
  'secret_ciphertext',
  'previous_secret_ciphertext',
  'previous_secret_expires_at',
  'status',
  'disabled_reason',
  'disabled_at',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof StoredEndpoint)[];
// Every column of the table is listed: a column added to endpoints and not here fails to compile.
const everyEndpointColumn: Record<
  Exclude<keyof StoredEndpoint, (typeof ENDPOINT_COLUMNS)[number]>,
  never
> = {};
void everyEndpointColumn;

/** Deliveries with their endpoints, read 16 at most by one statement compiled once per count. */
const selectDeliveriesToAttempt = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], ids: string[]) =>
    db
      .selectFrom('webhook_deliveries as d')
      .leftJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .selectAll('d')
      .select(ENDPOINT_COLUMNS.map((column) => sql.ref(`e.${column}`).as(`e_${column}`)))
      .where('d.id', 'in', ids),
  [],
  16,
);

/**
 * Deliveries by id, each with its endpoint, in one statement (attempts starting together, see
 * BatchLoader): on PostgreSQL one round trip for both instead of two side by side. Compiled once per
 * count of ids, so that on SQLite the read runs directly on the connection (preparedListQuery).
 */
export async function findDeliveriesToAttempt(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, DeliveryToAttempt>> {
  const rows = await selectDeliveriesToAttempt(db, [], ids);
  const found = new Map<string, DeliveryToAttempt>();
  for (const row of rows as (StoredDelivery & Record<string, unknown>)[]) {
    const delivery: Record<string, unknown> = {};
    const endpoint: Record<string, unknown> = {};
    for (const [column, value] of Object.entries(row)) {
      if (column.startsWith('e_')) endpoint[column.slice(2)] = value;
      else delivery[column] = value;
    }
    found.set(row.id, {
      delivery: deliveryOf(delivery as StoredDelivery),
      // A left join: no endpoint row (deleted) reads as nulls.
      endpoint: endpoint.id === null ? undefined : endpointOf(endpoint as StoredEndpoint),
    });
  }
  return found;
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
  const settled = await settleDeliveryRow(
    db,
    patch.status,
    patch.next_attempt_at,
    patch.completed_at,
    fence.attempt,
    fence.id,
    fence.attempt - 1,
  );
  return settled.length > 0;
}

// Every attempt's outcome (on SQLite, and a retry's on PostgreSQL): compiled once.
const settleDeliveryRow = preparedQuery(
  (
    db: Kysely<Database>,
    status: string,
    nextAttemptAt: string | null,
    completedAt: string | null,
    attempts: number,
    id: string,
    previousAttempts: number,
  ) =>
    db
      .updateTable('webhook_deliveries')
      .set({
        status: status as WebhookDeliveryStatus,
        next_attempt_at: nextAttemptAt,
        completed_at: completedAt,
        attempts,
      })
      .where('id', '=', id)
      .where('attempts', '=', previousAttempts)
      .where('status', '=', sql.lit('pending'))
      .returning('id'),
  ['status', 'next', 'completed', -1, 'id', -2],
);

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
  await insertAttemptRows(db, [row]);
}

/** The attempt log's columns with their PostgreSQL types, for settleAttemptsInOne's typed arrays. */
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
// Every attempt on SQLite (and a retry's on PostgreSQL) logs one: compiled once.
const insertAttemptRows = preparedInsert(
  'webhook_attempts',
  ATTEMPT_COLUMNS.map(([column]) => column),
  { maxRows: 1 },
);
// Every column of the table is listed: a column added to the log and not here fails to compile.
const everyAttemptColumn: Record<Exclude<keyof AttemptRow, (typeof ATTEMPT_COLUMNS)[number][0]>, never> = {};
void everyAttemptColumn;

/** One attempt's final outcome, as settleAttemptsInOne records it. */
export interface AttemptSettlement {
  /** The attempt's job: its row is deleted only while it carries one of these leases. */
  job: { id: string; leases: readonly number[] };
  /** The delivery, settled only if still pending at the attempt before this one. */
  delivery: { id: string; attempt: number };
  patch: { status: 'succeeded' | 'failed'; completed_at: string };
  row: AttemptRow;
}

/**
 * PostgreSQL only: the final outcomes (succeeded, or failed for good) of several attempts in one
 * statement, one round trip instead of a transaction's five for each. For each attempt, each part
 * happens only if the one before it did: its job's row is deleted where the lease is still on it, its
 * delivery settled only then and only if still pending at this attempt, and its log row written only
 * then. The attempts travel as one array per column (unnest), so the statement's text is the same
 * whatever their number. Says for each attempt, in order: `ended` false, the job was not this worker's
 * any more and nothing was recorded; `settled` false, the delivery had been settled meanwhile (the job
 * is ended). A job's fence holds at most two leases (the second while a renewal is under way).
 */
export async function settleAttemptsInOne(
  db: Kysely<Database>,
  settlements: readonly AttemptSettlement[],
): Promise<{ ended: boolean; settled: boolean }[]> {
  const column = <T>(pick: (s: AttemptSettlement) => T) => settlements.map(pick);
  const logArrays = ATTEMPT_COLUMNS.map(
    ([name, type]) => sql`cast(${column((s) => s.row[name])} as ${sql.raw(type)}[])`,
  );
  const logColumns = sql.join(ATTEMPT_COLUMNS.map(([name]) => sql.id(name)));
  const result = await sql<{ job_id: string; ended: boolean; settled: boolean }>`
    with input as (
      select * from unnest(
        cast(${column((s) => s.job.id)} as text[]),
        cast(${column((s) => s.job.leases[0] ?? null)} as bigint[]),
        cast(${column((s) => s.job.leases[1] ?? null)} as bigint[]),
        cast(${column((s) => s.patch.status)} as text[]),
        cast(${column((s) => s.patch.completed_at)} as text[]),
        ${sql.join(logArrays)}
      ) as i(job_id, lease, renewing_lease, status, completed_at, ${logColumns})
    ), ended as (
      delete from jobs using input
      where jobs.id = input.job_id and jobs.locked_until in (input.lease, input.renewing_lease)
      returning jobs.id
    ), settled as (
      update webhook_deliveries
      set status = input.status, next_attempt_at = null, completed_at = input.completed_at,
          attempts = input.attempt
      from input
      where webhook_deliveries.id = input.delivery_id and webhook_deliveries.attempts = input.attempt - 1
        and webhook_deliveries.status = 'pending' and input.job_id in (select id from ended)
      returning webhook_deliveries.id
    ), logged as (
      insert into webhook_attempts (${logColumns})
      select ${logColumns} from input
      where input.delivery_id in (select id from settled)
      returning delivery_id
    )
    select input.job_id,
      input.job_id in (select id from ended) as ended,
      input.delivery_id in (select delivery_id from logged) as settled
    from input`.execute(db);
  const byJob = new Map(result.rows.map((row) => [row.job_id, row]));
  return settlements.map((s) => {
    const row = byJob.get(s.job.id);
    return { ended: row?.ended === true, settled: row?.settled === true };
  });
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
