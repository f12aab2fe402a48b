import { PostgresAdapter, sql, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely';
import { cancelJobsUnder } from '../../jobs/jobs.js';
import { preparedInsert, preparedListQuery, preparedQuery } from '../../db/prepared.js';
import { BATCH_LOADER_MAX } from '../../lib/batch-loader.js';
import type { Database, IntakeItemsTable, IntakesTable, ItemFilesTable } from '../../db/schema.js';
import type { IntakeStatus } from '../../domain/intake-state.js';
import { applicableKeys } from '../../domain/conditions.js';
import { isOwnerItem, type ItemDefinition } from '../../domain/items.js';
import { deepFreeze } from '../../lib/deep-freeze.js';
import { KeptLately } from '../../lib/kept-lately.js';
import { isOfWorld, type World } from '../../kernel/world.js';

export type IntakeRow = Selectable<IntakesTable>;
export type FileRow = Selectable<ItemFilesTable>;

type StoredItem = Selectable<IntakeItemsTable>;

/**
 * An item as the services see it. Its two JSON columns are parsed here, once, when the row is read
 * (and written back as JSON by `updateItem`), so no service parses or serialises them.
 */
export type ItemRow = Omit<StoredItem, 'definition' | 'value_json'> & {
  definition: ItemDefinition;
  /** The client's saved value (text kinds, structured answers, choices); null when none is saved. */
  value: unknown;
};

/** A change to an item: its definition and value are given parsed. `value: null` clears the value. */
export type ItemPatch = Omit<Updateable<IntakeItemsTable>, 'definition' | 'value_json'> & {
  definition?: ItemDefinition;
  value?: unknown;
};

/**
 * Item definitions parsed lately, by their stored text. Every read of an intake's items parses their
 * definitions (a cold status read spent 9% of its time there), and the same texts come back read after
 * read. A kept definition is shared by every read that finds the same text, so it is frozen, all the way
 * down. At most 2,000 texts of at most 16 KB each are kept.
 */
const parsedDefinitions = new KeptLately(
  (text) => deepFreeze(JSON.parse(text) as ItemDefinition),
  2_000,
  16_384,
);

/** An item's definition from its stored text, parsed or kept (exported for its tests). */
export function definitionOf(text: string): ItemDefinition {
  return parsedDefinitions.get(text);
}

/**
 * An item from its stored row, every field named: copied by object rest and spread instead, a row took
 * V8's slow path (5 µs a row in a scratch loop, against under 0.1 µs written out), and the copy was a
 * slow object for every later read of its fields.
 */
function itemOf(row: StoredItem): ItemRow {
  return {
    intake_id: row.intake_id,
    account_id: row.account_id,
    livemode: row.livemode,
    key: row.key,
    position: row.position,
    definition: definitionOf(row.definition),
    status: row.status,
    value: row.value_json === null ? null : (JSON.parse(row.value_json) as unknown),
    secret_ciphertext: row.secret_ciphertext,
    revision_note: row.revision_note,
    saved_at: row.saved_at,
    submitted_at: row.submitted_at,
    approved_at: row.approved_at,
    approval_seq: row.approval_seq,
    secret_revealed_at: row.secret_revealed_at,
    decided_by: row.decided_by,
    created_at: row.created_at,
    review_note: row.review_note ?? null,
  };
}

/** SPEC shows intake ids as in_ (REST) and int_ (webhooks): both reach the same intake. */
export function canonicalIntakeId(id: string): string {
  return id.startsWith('int_') ? `in_${id.slice(4)}` : id;
}

type AnswerFacts = Pick<ItemRow, 'key' | 'definition' | 'value'>;

/**
 * The keys of the items that apply given the answers saved so far (domain/conditions.ts), for rows
 * in the intake's order: the one rule behind the portal, completion, progress, reminders and results.
 */
export function applicableItemKeys(rows: readonly AnswerFacts[]): Set<string> {
  return applicableKeys(
    rows.map((row) => ({ key: row.key, show_if: row.definition.show_if, value: row.value })),
  );
}

/**
 * The items the client answers now, from all of an intake's rows in order: owner items (decisions)
 * never reach the portal, reminders or progress, and neither do items an earlier answer hides.
 */
export function clientItems<T extends AnswerFacts>(rows: readonly T[]): T[] {
  const applies = applicableItemKeys(rows);
  return rows.filter((row) => applies.has(row.key) && !isOwnerItem(row.definition));
}

// Every creation writes these: compiled once (a row without one of the columns is built as before),
// and on PostgreSQL sent with the transaction's next statement.
const insertIntakeRows = preparedInsert(
  'intakes',
  [
    'id',
    'account_id',
    'livemode',
    'project_name',
    'client_email',
    'client_name',
    'client_language',
    'client_phone',
    'client_timezone',
    'client_country',
    'status',
    'chase_schedule',
    'due_date',
    'retention_mode',
    'retention_days',
    'retention_anonymize',
    'template_id',
    'client_brief',
    'folder_id',
    'approval_counter',
    'results_cursor',
    'created_at',
    'updated_at',
    'sent_at',
    'completed_at',
    'archived_at',
    'client_first_viewed_at',
    'client_last_seen_at',
    'results_collected_at',
    'purged_at',
    'anonymized_at',
  ],
  { deferrable: true },
);
const insertItemRows = preparedInsert(
  'intake_items',
  [
    'intake_id',
    'account_id',
    'livemode',
    'key',
    'position',
    'definition',
    'status',
    'value_json',
    'secret_ciphertext',
    'revision_note',
    'saved_at',
    'submitted_at',
    'approved_at',
    'approval_seq',
    'secret_revealed_at',
    'decided_by',
    'created_at',
  ],
  { deferrable: true },
);

export async function insertIntake(db: Kysely<Database>, row: Insertable<IntakesTable>): Promise<void> {
  await insertIntakeRows(db, [row]);
}

/** New pending items of an intake, positioned from `firstPosition`. */
export function itemRows(
  world: Pick<World, 'accountId' | 'livemode'>,
  intakeId: string,
  items: readonly ItemDefinition[],
  firstPosition: number,
  at: string,
) {
  return items.map((def, index) => ({
    intake_id: intakeId,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    key: def.key,
    position: firstPosition + index,
    definition: JSON.stringify(def),
    status: 'pending' as const,
    value_json: null,
    secret_ciphertext: null,
    revision_note: null,
    saved_at: null,
    submitted_at: null,
    approved_at: null,
    approval_seq: null,
    secret_revealed_at: null,
    decided_by: null,
    created_at: at,
  }));
}

/** Items as a read would give them, from the rows itemRows made (and insertItems wrote). */
export function writtenItems(rows: readonly ReturnType<typeof itemRows>[number][]): ItemRow[] {
  return rows.map((row) => itemOf({ ...row, review_note: null }));
}

export async function insertItems(db: Kysely<Database>, rows: Insertable<IntakeItemsTable>[]): Promise<void> {
  await insertItemRows(db, rows);
}

// Read by every intake route (and cold reads): compiled once.
const selectIntakeInWorld = preparedQuery(
  (db: Kysely<Database>, id: string, accountId: string, livemode: number) =>
    db
      .selectFrom('intakes')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .where('livemode', '=', livemode),
  ['intake', 'account', 0],
);

/** The intake in the caller's world; another account's or mode's intake is simply not found. */
export async function findIntake(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<IntakeRow | undefined> {
  const [row] = await selectIntakeInWorld(db, canonicalIntakeId(id), world.accountId, world.livemode ? 1 : 0);
  return row;
}

// Every job about an intake (a reminder, a message, an overdue check) starts with this read: compiled once.
const selectIntakeById = preparedQuery(
  (db: Kysely<Database>, id: string) => db.selectFrom('intakes').selectAll().where('id', '=', id),
  [''],
);

/** By id alone: for the portal (the id is the capability) and for jobs. */
export async function findIntakeById(db: Kysely<Database>, id: string): Promise<IntakeRow | undefined> {
  const [row] = await selectIntakeById(db, canonicalIntakeId(id));
  return row;
}

/** An intake, and whether its client's email address is suppressed (undefined: not read with it). */
export interface IntakeWithSuppression {
  intake: IntakeRow;
  clientSuppressed: boolean | undefined;
}

/** Printable ASCII only: an address both databases lower-case as JavaScript does. */
const ASCII = /^[ -~]*$/;

/**
 * Intakes by (canonical) id, each with whether its client's email address is suppressed for the
 * intake's account and mode, in one statement (reminders dispatched together, see BatchLoader; a
 * reminder's dispatch needs both, and on PostgreSQL a second statement after the first would cost a
 * second round trip). Suppressions keep addresses lower-cased: the statement lower-cases the client's
 * address the way both databases agree on, ASCII letters only (PostgreSQL under the "C" collation,
 * SQLite always), so for an address with any other character `clientSuppressed` is undefined and the
 * caller reads it on its own.
 */
export async function findIntakesWithSuppression(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, IntakeWithSuppression>> {
  const rows = await selectIntakesWithSuppression(db, [], ids);
  const found = new Map<string, IntakeWithSuppression>();
  for (const { client_suppressed: suppressed, ...intake } of rows) {
    const clientSuppressed = ASCII.test(intake.client_email) ? Boolean(suppressed) : undefined;
    found.set(intake.id, { intake, clientSuppressed });
  }
  return found;
}

// Read by the reminders a claim took, for all of them at once (as the items and files below): compiled
// once per count of ids and dialect, so that on SQLite the read runs directly on the connection
// (preparedListQuery). As many ids as a BatchLoader gives at once (BATCH_LOADER_MAX).
const selectIntakesWithSuppression = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], ids: string[]) => {
    const address =
      db.getExecutor().adapter instanceof PostgresAdapter
        ? sql<string>`lower(intakes.client_email collate "C")`
        : sql<string>`lower(intakes.client_email)`;
    return db
      .selectFrom('intakes')
      .selectAll('intakes')
      .select((eb) =>
        eb
          .exists(
            eb
              .selectFrom('suppressions')
              .select('suppressions.address')
              .whereRef('suppressions.account_id', '=', 'intakes.account_id')
              .whereRef('suppressions.livemode', '=', 'intakes.livemode')
              .where('suppressions.address', '=', address),
          )
          .as('client_suppressed'),
      )
      .where('intakes.id', 'in', ids);
  },
  [],
  BATCH_LOADER_MAX,
);

export interface IntakeFilters {
  status?: IntakeStatus | undefined;
  clientEmail?: string | undefined;
  folderId?: string | undefined;
  /** Contained in the project name, client name or client email, case-insensitively. */
  text?: string | undefined;
  /** true: only intakes with submitted items waiting for review; false: only those without. */
  awaitingReview?: boolean | undefined;
  /** Intakes with answers waiting for review first (the dashboard's list), then newest first. */
  reviewFirst?: boolean | undefined;
  limit: number;
  offset: number;
  /**
   * The id of the last intake of the previous page: the page starts after it, in the list's order (a
   * walk of the index however deep the page; not with `reviewFirst`).
   */
  startingAfter?: string | undefined;
}

/**
 * A page of the list and the total of the whole list; `cursorFound` is false when `startingAfter` names
 * no intake of the list's account and mode.
 */
export interface ListedPage {
  total: number;
  rows: ListedIntakeRow[];
  cursorFound: boolean;
}

type IntakesInWorld = ReturnType<typeof intakesInWorld>;

function intakesInWorld(db: Kysely<Database>, accountId: string, livemode: number) {
  return db.selectFrom('intakes').where('account_id', '=', accountId).where('livemode', '=', livemode);
}

/**
 * Intakes with an answer awaiting review, by the count their rows keep (migration 0044): the condition
 * written as the partial index of them states it (migration 0046), so that a page walks that index.
 */
function awaitingReview(query: IntakesInWorld): IntakesInWorld {
  return query.where('intakes.awaiting_review', '>', sql.lit(0));
}

function notAwaitingReview(query: IntakesInWorld): IntakesInWorld {
  return query.where('intakes.awaiting_review', '<=', sql.lit(0));
}

function countQuery(query: IntakesInWorld) {
  return query.select((eb) => eb.fn.countAll<number>().as('n'));
}

/** What a list shows of each intake (the API's and the dashboard's lists): not the whole row. */
const LISTED_COLUMNS = [
  'intakes.id',
  'intakes.project_name',
  'intakes.client_email',
  'intakes.client_name',
  'intakes.status',
  'intakes.created_at',
  // Kept on the row by triggers (migration 0044), not counted from the items at each read.
  'intakes.awaiting_review',
] as const;

export type ListedIntakeRow = Pick<
  IntakeRow,
  'id' | 'project_name' | 'client_email' | 'client_name' | 'status' | 'created_at' | 'awaiting_review'
>;

/** A page of the list, newest first, each intake with its count of submitted items. */
function pageQuery(query: IntakesInWorld, limit: number, offset: number) {
  return query
    .select(LISTED_COLUMNS)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset);
}

/**
 * The listed rows: every field named (see itemOf), any other column (the page's total) left out, the
 * count as a number whatever the driver gave.
 */
function listedRows(rows: readonly ListedIntakeRow[]): ListedIntakeRow[] {
  return rows.map((r) => ({
    id: r.id,
    project_name: r.project_name,
    client_email: r.client_email,
    client_name: r.client_name,
    status: r.status,
    created_at: r.created_at,
    awaiting_review: Number(r.awaiting_review),
  }));
}

/**
 * How many intakes of the account and mode there are (of one status, or of every status), from the
 * counts the intakes' triggers keep (migration 0040): a few rows, however many intakes there are.
 */
function countedInWorld(db: Kysely<Database>, accountId: string, livemode: number, status?: string) {
  let counts = db
    .selectFrom('intake_counts')
    .where('intake_counts.account_id', '=', accountId)
    .where('intake_counts.livemode', '=', livemode);
  if (status !== undefined) counts = counts.where('intake_counts.status', '=', status);
  return counts.select((eb) =>
    eb.fn.coalesce(eb.fn.sum<number | string>('intake_counts.n'), sql.lit(0)).as('n'),
  );
}

// The list as agents poll it (no filter): compiled once. On PostgreSQL the page brings the total with
// each row (an uncorrelated subquery over the kept counts), so one round trip answers; only an empty
// page (an offset past the end) needs the total on its own. On SQLite, where a statement costs no
// round trip, the page and the total are read apart: the total in each row of the page cost SQLite
// more than a statement of its own.
const selectPageInWorld = preparedQuery(
  (db: Kysely<Database>, accountId: string, livemode: number, limit: number, offset: number) =>
    pageQuery(intakesInWorld(db, accountId, livemode), limit, offset),
  ['account', 0, 1, 2],
);
const selectPageAndTotalInWorld = preparedQuery(
  (
    db: Kysely<Database>,
    countAccountId: string,
    countLivemode: number,
    accountId: string,
    livemode: number,
    limit: number,
    offset: number,
  ) =>
    pageQuery(intakesInWorld(db, accountId, livemode), limit, offset).select(() =>
      countedInWorld(db, countAccountId, countLivemode).as('total'),
    ),
  ['count account', 3, 'account', 0, 1, 2],
);
const selectCountInWorld = preparedQuery(
  (db: Kysely<Database>, accountId: string, livemode: number) => countedInWorld(db, accountId, livemode),
  ['account', 0],
);

/** A page of the unfiltered list and the list's total, by the compiled reads above. */
async function unfilteredPage(
  db: Kysely<Database>,
  accountId: string,
  livemode: number,
  limit: number,
  offset: number,
): Promise<{ total: number; rows: ListedIntakeRow[] }> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const rows = await selectPageAndTotalInWorld(db, accountId, livemode, accountId, livemode, limit, offset);
    const total = rows[0] ? rows[0].total : (await selectCountInWorld(db, accountId, livemode))[0]?.n;
    return { total: Number(total ?? 0), rows };
  }
  const [rows, [counted]] = await Promise.all([
    selectPageInWorld(db, accountId, livemode, limit, offset),
    selectCountInWorld(db, accountId, livemode),
  ]);
  return { total: Number(counted?.n ?? 0), rows };
}

/** A filter by status and nothing else. */
function onlyByStatus(filters: IntakeFilters): boolean {
  return isUnfiltered({ ...filters, status: undefined }) && filters.status !== undefined;
}

/** A filter by awaiting review, and by status or not, and nothing else. */
function byStatusAndReviewAlone(filters: IntakeFilters): boolean {
  return isUnfiltered({ ...filters, status: undefined, awaitingReview: undefined });
}

function isUnfiltered(filters: IntakeFilters): boolean {
  return (
    !filters.status &&
    !filters.clientEmail &&
    !filters.folderId &&
    !filters.text &&
    filters.awaitingReview === undefined &&
    !filters.reviewFirst
  );
}

const selectCursorInWorld = preparedQuery(
  (db: Kysely<Database>, accountId: string, livemode: number, id: string) =>
    intakesInWorld(db, accountId, livemode).where('id', '=', id).select(['created_at', 'id']),
  ['account', 0, 'id'],
);

export async function listIntakes(
  db: Kysely<Database>,
  world: World,
  filters: IntakeFilters,
): Promise<ListedPage> {
  const livemode = world.livemode ? 1 : 0;
  let after: { created_at: string; id: string } | undefined;
  if (filters.startingAfter !== undefined) {
    if (filters.reviewFirst) throw new Error('listIntakes: startingAfter does not go with reviewFirst');
    [after] = await selectCursorInWorld(db, world.accountId, livemode, filters.startingAfter);
    if (!after) return { total: 0, rows: [], cursorFound: false };
  }
  if (isUnfiltered(filters) && !after) {
    const { total, rows } = await unfilteredPage(
      db,
      world.accountId,
      livemode,
      filters.limit,
      filters.offset,
    );
    return { total, rows: listedRows(rows), cursorFound: true };
  }
  let query = intakesInWorld(db, world.accountId, livemode);
  if (filters.status) query = query.where('status', '=', filters.status);
  const ofStatus = query;
  if (filters.awaitingReview !== undefined) {
    query = filters.awaitingReview ? awaitingReview(query) : notAwaitingReview(query);
  }
  if (filters.clientEmail) query = query.where('client_email', '=', filters.clientEmail.toLowerCase());
  if (filters.folderId) query = query.where('folder_id', '=', filters.folderId);
  if (filters.text) {
    // lower() on both sides and LIKE with an explicit escape: the same on SQLite and PostgreSQL
    // (SQLite's lower() folds ASCII letters only, so non-ASCII capitals match only as written).
    const pattern = `%${filters.text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where((eb) =>
      eb.or(
        (['project_name', 'client_name', 'client_email'] as const).map(
          (column) => sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`,
        ),
      ),
    );
  }
  const count = (q: typeof query) =>
    countQuery(q)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  const page = async (q: typeof query, limit: number, offset: number) =>
    listedRows(await pageQuery(q, limit, offset).execute());
  // The cursor bounds the page only: the total is the whole list's.
  const pageOf = after
    ? query.where((eb) =>
        eb(eb.refTuple('intakes.created_at', 'intakes.id'), '<', eb.tuple(after.created_at, after.id)),
      )
    : query;
  // The whole list's total: a kept count for every status or one; those not awaiting review as that
  // count less those awaiting (a count of their partial index), in one statement; else a count of the
  // rows matched.
  const filtersAlone = { ...filters, reviewFirst: false };
  const kept = () => countedInWorld(db, world.accountId, livemode, filters.status);
  const total = () => {
    if (isUnfiltered(filtersAlone) || onlyByStatus(filtersAlone)) {
      return kept()
        .executeTakeFirst()
        .then((counted) => Number(counted?.n ?? 0));
    }
    if (filters.awaitingReview === false && byStatusAndReviewAlone(filtersAlone)) {
      return db
        .selectNoFrom(() => [kept().as('whole'), countQuery(awaitingReview(ofStatus)).as('waiting')])
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.whole ?? 0) - Number(r.waiting ?? 0));
    }
    return count(query);
  };
  if (!filters.reviewFirst) {
    const [whole, rows] = await Promise.all([total(), page(pageOf, filters.limit, filters.offset)]);
    return { total: whole, rows, cursorFound: true };
  }
  // Awaiting review first, then the rest, each newest first: two index walks that stop at the page,
  // not a sort of every intake of the account.
  const waitingQuery = awaitingReview(query);
  const restQuery = notAwaitingReview(query);
  const [whole, waitingTotal, waiting] = await Promise.all([
    total(),
    count(waitingQuery),
    page(waitingQuery, filters.limit, filters.offset),
  ]);
  const missing = filters.limit - waiting.length;
  const rest = missing > 0 ? await page(restQuery, missing, Math.max(0, filters.offset - waitingTotal)) : [];
  return { total: whole, rows: [...waiting, ...rest], cursorFound: true };
}

const selectItemsOf = preparedQuery(
  (db: Kysely<Database>, intakeId: string) =>
    db.selectFrom('intake_items').selectAll().where('intake_id', '=', intakeId).orderBy('position'),
  [''],
);

export async function itemsOf(db: Kysely<Database>, intakeId: string): Promise<ItemRow[]> {
  return (await selectItemsOf(db, intakeId)).map(itemOf);
}

/**
 * The items of each of these intakes, in their order, with one statement (reminders dispatched
 * together, see BatchLoader). An intake without items, or unknown, has no entry.
 */
export async function itemsByIntake(
  db: Kysely<Database>,
  intakeIds: readonly string[],
): Promise<Map<string, ItemRow[]>> {
  const rows = await selectItemsByIntake(db, [], intakeIds);
  return groupBy(rows.map(itemOf), (item) => item.intake_id);
}

const selectItemsByIntake = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], intakeIds: string[]) =>
    db
      .selectFrom('intake_items')
      .selectAll()
      .where('intake_id', 'in', intakeIds)
      .orderBy('intake_id')
      .orderBy('position'),
  [],
  BATCH_LOADER_MAX,
);

export async function findItem(
  db: Kysely<Database>,
  intakeId: string,
  key: string,
): Promise<ItemRow | undefined> {
  const row = await db
    .selectFrom('intake_items')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && itemOf(row);
}

export async function filesOf(db: Kysely<Database>, intakeId: string, itemKey?: string): Promise<FileRow[]> {
  return itemKey === undefined ? selectFilesOf(db, intakeId) : selectFilesOfItem(db, intakeId, itemKey);
}

// Every message about an intake (its files' names) and every file's page reads these: compiled once.
const itemFilesQuery = (db: Kysely<Database>, intakeId: string) =>
  db
    .selectFrom('item_files')
    .selectAll()
    .where('intake_id', '=', intakeId)
    .orderBy('created_at')
    .orderBy('id');
const selectFilesOf = preparedQuery(itemFilesQuery, ['']);
const selectFilesOfItem = preparedQuery(
  (db: Kysely<Database>, intakeId: string, itemKey: string) =>
    itemFilesQuery(db, intakeId).where('item_key', '=', itemKey),
  ['intake', 'item'],
);

/** The files of each of these intakes, as filesOf orders them, with one statement (see itemsByIntake). */
export async function filesByIntake(
  db: Kysely<Database>,
  intakeIds: readonly string[],
): Promise<Map<string, FileRow[]>> {
  return groupBy(await selectFilesByIntake(db, [], intakeIds), (file) => file.intake_id);
}

const selectFilesByIntake = preparedListQuery(
  (db: Kysely<Database>, _fixed: [], intakeIds: string[]) =>
    db
      .selectFrom('item_files')
      .selectAll()
      .where('intake_id', 'in', intakeIds)
      .orderBy('created_at')
      .orderBy('id'),
  [],
  BATCH_LOADER_MAX,
);

function groupBy<T>(rows: readonly T[], keyOf: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return groups;
}

/** A file by its id alone (a signed download URL names only the file). */
export function findFile(db: Kysely<Database>, fileId: string): Promise<FileRow | undefined> {
  return db.selectFrom('item_files').selectAll().where('id', '=', fileId).executeTakeFirst();
}

/** A file of one item of an intake. */
export function findItemFile(
  db: Kysely<Database>,
  intakeId: string,
  itemKey: string,
  fileId: string,
): Promise<FileRow | undefined> {
  return db
    .selectFrom('item_files')
    .selectAll()
    .where('id', '=', fileId)
    .where('intake_id', '=', intakeId)
    .where('item_key', '=', itemKey)
    .executeTakeFirst();
}

export async function insertFile(db: Kysely<Database>, row: FileRow): Promise<void> {
  await db.insertInto('item_files').values(row).execute();
}

/** Deletes files' rows of an intake; their stored objects go after the commit (deleteStoredFilesAfterCommit). */
export async function deleteFiles(
  db: Kysely<Database>,
  intakeId: string,
  fileIds: readonly string[],
): Promise<void> {
  if (fileIds.length === 0) return;
  await db.deleteFrom('item_files').where('intake_id', '=', intakeId).where('id', 'in', fileIds).execute();
}

export async function updateIntake(
  db: Kysely<Database>,
  id: string,
  patch: Updateable<IntakesTable>,
): Promise<void> {
  await db.updateTable('intakes').set(patch).where('id', '=', id).execute();
}

/** Of these storage keys, those an uploaded file's row still refers to. */
export async function referencedStorageKeys(
  db: Kysely<Database>,
  keys: readonly string[],
): Promise<string[]> {
  if (keys.length === 0) return [];
  const rows = await db
    .selectFrom('item_files')
    .select('storage_key')
    .where('storage_key', 'in', keys)
    .execute();
  return rows.map((r) => r.storage_key);
}

/** Of these file ids, those whose row still exists. */
export async function existingFileIds(db: Kysely<Database>, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('item_files').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}

export async function updateItem(
  db: Kysely<Database>,
  intakeId: string,
  key: string,
  { definition, value, ...patch }: ItemPatch,
): Promise<void> {
  await db
    .updateTable('intake_items')
    .set({
      ...patch,
      ...(definition === undefined ? {} : { definition: JSON.stringify(definition) }),
      ...(value === undefined ? {} : { value_json: value === null ? null : JSON.stringify(value) }),
    })
    .where('intake_id', '=', intakeId)
    .where('key', '=', key)
    .execute();
}

/**
 * Takes the intake's row lock for the rest of the transaction (a no-op write: PostgreSQL locks the row,
 * SQLite takes its write lock), so concurrent changes to one intake apply one after the other.
 */
export async function lockIntake(db: Kysely<Database>, id: string): Promise<IntakeRow | undefined> {
  await lockIntakeRow(db, id);
  return findIntakeById(db, id);
}

/** lockIntake without reading the row back, for a caller that has it already. */
export async function lockIntakeRow(db: Kysely<Database>, id: string): Promise<void> {
  await updateIntakeInPlace(db, id);
}

// Every outcome of a reminder, a submission or a review takes this lock first: compiled once.
const updateIntakeInPlace = preparedQuery(
  (db: Kysely<Database>, id: string) =>
    db
      .updateTable('intakes')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id),
  [''],
);

/**
 * Locks the intake and cancels its pending jobs: the first steps of deleting it. Jobs come before
 * every other row, because a worker finishing one of them deletes its job row and then records on
 * the rows it touched (a message, a delivery): taking the rows in the same order, a deletion waits
 * for that worker instead of deadlocking with it. Undefined when the intake is already gone.
 */
export async function lockIntakeForDeletion(
  db: Kysely<Database>,
  id: string,
): Promise<IntakeRow | undefined> {
  const intake = await lockIntake(db, id);
  // Jobs about the intake (subject: its id) or about one of its items (subject: `<id>/<key>`).
  if (intake) await cancelJobsUnder(db, id);
  return intake;
}

/** The intake's own rows; after lockIntakeForDeletion, in the same transaction. */
export async function deleteIntakeRows(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('item_files').where('intake_id', '=', id).execute();
  await db.deleteFrom('intake_items').where('intake_id', '=', id).execute();
  await db.deleteFrom('events').where('intake_id', '=', id).execute();
  await db.deleteFrom('idempotency_keys').where('resource_id', '=', id).execute();
  await db.deleteFrom('intakes').where('id', '=', id).execute();
}

/**
 * The items of several of the world's intakes at once (a list page shows each one's progress), read
 * by the intakes' ids alone, the items' own key. With the account and mode in the statement too, a
 * planner could join the range of every item of the account (the index that starts with them) to the
 * few asked for, and did (PostgreSQL's plan for a repeated statement, SQLite's without statistics), at
 * a cost that grew with the account's items. The world is checked on each row instead.
 */
export async function itemsOfIntakes(db: Kysely<Database>, world: World, ids: string[]): Promise<ItemRow[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('intake_items')
    .selectAll()
    .where('intake_id', 'in', ids)
    .orderBy('position')
    .execute();
  return rows.filter((r) => isOfWorld(r, world)).map(itemOf);
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
