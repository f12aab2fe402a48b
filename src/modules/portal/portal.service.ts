import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import {
  intakeAcceptsClientWork,
  itemTransition,
  progressOf,
  statusAfterClientChange,
  stillNeeded,
  unsentAnswer,
  type ItemStatus,
} from '../../domain/intake-state.js';
import { isFileType, isOwnerItem } from '../../domain/items.js';
import { clientCountry } from '../../domain/phone.js';
import { planOf, storageQuota, type Plan } from '../../domain/plans.js';
import {
  checkDraftValue,
  checkFile,
  checkSubmission,
  isEmptyValue,
  type Check,
  type FileFacts,
  type SchemaValidator,
} from '../../domain/values.js';
import { ApiError } from '../../http/errors.js';
import { deriveKey, encryptSecret, keyedHash } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { safeFileName } from '../../lib/file-names.js';
import type { AppServices } from '../../services.js';
import { toFileRecord } from '../files/files.schemas.js';
import { briefFileLinks } from '../intakes/brief-files.links.js';
import { conversationOf, toClientComment } from '../comments/comments.service.js';
import { itemBasics } from '../intakes/intakes.mappers.js';
import { newStorageKey } from '../files/storage.js';
import { discardUpload, receiveUpload, storeUpload } from '../files/upload.js';
import { deleteStoredFilesAfterCommit } from '../files/stored-files.service.js';
import { inspectFile } from '../files/inspect.js';
import { sanitizeUploadedSvg } from './svg-upload.js';
import { recordItemHistory } from '../history/history.service.js';
import { emit, itemStates, settleIntake } from '../intakes/intakes.lifecycle.js';
import {
  clientItems,
  deleteFiles,
  filesOf,
  findIntakeById,
  findItemFile,
  insertFile,
  itemsOf,
  moveItemAfterClientChange,
  recordAnswerChanged,
  recordClientVisit,
  recordItemSubmitted,
  recordSavedAnswer,
  type FileRow,
  type IntakeRow,
  type ItemRow,
} from '../intakes/intakes.service.js';
import { secretContext, secretKeyOf } from '../intakes/results.service.js';
import {
  cancelAutoApproval,
  requireItem as requireAnyItem,
  scheduleAutoApproval,
  withLockedIntake,
} from '../intakes/review.service.js';
import { worldOfIntake, type World } from '../../kernel/world.js';
import { addUsage, usageValue } from '../usage/usage.service.js';
import {
  deleteExpiredReservations,
  deleteReservation,
  insertReservation,
  reservedBytes,
} from './upload-reservations.repository.js';
import type { PortalItem, PortalView, SubmitAllResult } from './portal.schemas.js';

const CLIENT_VIEW_EVERY_MS = 30 * 60 * 1000;

/** An item the client answers; decisions (owner items) do not exist as far as the portal is concerned. */
async function requireItem(db: Kysely<Database>, intake: IntakeRow, key: string): Promise<ItemRow> {
  const item = await requireAnyItem(db, intake, key);
  if (isOwnerItem(item.definition)) {
    throw new ApiError('not_found', `Intake ${intake.id} has no item with key ${key}.`);
  }
  return item;
}
const clientActor = { type: 'client', id: null } as const;

/** The country of the client's phone numbers typed without "+" (see domain/phone.ts). */
export function countryOfIntake(intake: IntakeRow): string | undefined {
  return clientCountry({
    country: intake.client_country ?? null,
    timezone: intake.client_timezone,
    language: intake.client_language,
  });
}

/** The intake behind a portal link: 404 when deleted or not yet sent, 410 when archived. */
export async function openIntake(db: Kysely<Database>, id: string): Promise<IntakeRow> {
  const intake = await findIntakeById(db, id);
  if (!intake || intake.status === 'draft' || !intake.id.startsWith('in_')) {
    throw new ApiError('not_found', 'This intake link is not valid. Ask the sender for a new link.');
  }
  if (intake.status === 'archived') throw new ApiError('gone', 'This intake has been closed by its sender.');
  if (intake.purged_at)
    throw new ApiError('gone', 'The contents of this intake have been removed under its retention policy.');
  return intake;
}

function assertClientMayWork(intake: IntakeRow): void {
  const allowed = intakeAcceptsClientWork(intake.status);
  if (!allowed.ok) throw new ApiError('conflict', `${allowed.reason}.`);
}

function toPortalItem(item: ItemRow, files: FileRow[]): z.infer<typeof PortalItem> {
  const secret = item.definition.type === 'secret';
  // Onto the basics' own fresh object: a spread takes V8's slow path (see itemBasics).
  return Object.assign(itemBasics(item), {
    value: secret ? null : item.value,
    secret_saved: secret && item.secret_ciphertext !== null,
    files: files.filter((f) => f.item_key === item.key).map(toFileRecord),
    saved_at: item.saved_at,
    submitted_at: item.submitted_at,
  });
}

export async function buildView(
  db: Kysely<Database>,
  intake: IntakeRow,
  /** Signs the brief files' download links; without it they are left out. */
  signer?: Pick<AppServices, 'config' | 'clock'>,
): Promise<z.infer<typeof PortalView>> {
  const [all, files] = await Promise.all([itemsOf(db, intake.id), filesOf(db, intake.id)]);
  const items = clientItems(all);
  // The conversations of the items the client sees: never a decision's (an owner item), never who on
  // the owner's side wrote a comment.
  const shown = new Set(items.map((item) => item.key));
  const comments = (await conversationOf(db, intake)).filter((c) => shown.has(c.item_key));
  return {
    intake_id: intake.id,
    project_name: intake.project_name,
    client_name: intake.client_name,
    language: intake.client_language,
    due_date: intake.due_date,
    status: intake.status,
    brief: intake.client_brief,
    brief_files: signer ? await briefFileLinks(signer, db, intake.id) : [],
    progress: progressOf(itemStates(items)),
    items: items.map((item) => toPortalItem(item, files)),
    comments: comments.map(toClientComment),
  };
}

/**
 * GET /portal/api/:id: the client's view. Records client_last_seen; the first open fires
 * intake.viewed, and client.viewed fires at most once per 30 minutes.
 */
export async function viewPortal(services: AppServices, id: string, ip: string) {
  const db = services.db.kysely;
  const found = await openIntake(db, id);
  const world = await worldOfIntake(db, found, clientActor, services.clock);
  await recordView(services, world, found, ip);
  return buildView(db, (await findIntakeById(db, found.id)) ?? found, services);
}

export async function recordView(
  services: AppServices,
  world: World,
  found: IntakeRow,
  ip: string,
): Promise<void> {
  await withLockedIntake(services.db.kysely, found, async (trx, intake) => {
    const now = world.clock.now();
    const last = intake.client_last_seen_at ? Date.parse(intake.client_last_seen_at) : undefined;
    await recordClientVisit(trx, intake, now.toISOString());
    if (!intake.client_first_viewed_at) {
      await emit(trx, world, intake, 'intake.viewed', {
        client_email: intake.client_email,
        viewed_at: now.toISOString(),
      });
    }
    if (last === undefined || now.getTime() - last >= CLIENT_VIEW_EVERY_MS) {
      await emit(trx, world, intake, 'client.viewed', {
        client_email: intake.client_email,
        viewed_at: now.toISOString(),
        ip: keyedHash(deriveKey(services.config.secretKey, 'client-ip'), ip),
      });
    }
  });
}

/**
 * PUT /portal/api/:id/timezone: the client's browser reports its IANA time zone, so reminders can avoid
 * the client's night. A zone the caller set explicitly is kept.
 */
export async function recordClientTimezone(
  services: AppServices,
  id: string,
  timezone: string,
): Promise<void> {
  const intake = await openIntake(services.db.kysely, id);
  await services.db.kysely
    .updateTable('intakes')
    .set({ client_timezone: timezone })
    .where('id', '=', intake.id)
    .where('client_timezone', 'is', null)
    .execute();
}

async function clientContext(services: AppServices, id: string) {
  const db = services.db.kysely;
  const intake = await openIntake(db, id);
  assertClientMayWork(intake);
  const world = await worldOfIntake(db, intake, clientActor, services.clock);
  return { db, intake, world };
}

function assertItemChangeable(item: ItemRow, action: 'save' | 'remove_file'): void {
  const move = itemTransition(item.status, action);
  if (!move.ok) throw new ApiError('conflict', `${item.key}: ${move.reason}.`);
}

/** PUT /portal/api/:id/items/:key: autosave of a value; upper bounds are checked now, the rest at submit. */
export async function saveValue(services: AppServices, id: string, key: string, value: unknown) {
  const { db, intake: found, world } = await clientContext(services, id);
  await withLockedIntake(db, found, async (trx, intake) => {
    const item = await requireItem(trx, intake, key);
    const def = item.definition;
    if (isFileType(def.type)) throw new ApiError('unprocessable', `${key} takes files: upload them instead.`);
    assertItemChangeable(item, 'save');
    // A draft's structured value is measured (depth, nodes) but not checked against the schema: that
    // waits for submission, where a costly check runs under the time budget.
    const checked = checkDraftValue(def, value, () => undefined, { country: countryOfIntake(intake) });
    if (!checked.ok) throw new ApiError('unprocessable', `${key}.${checked.constraint}: ${checked.message}`);
    const before = itemStates(await itemsOf(trx, intake.id));
    const now = world.clock.now().toISOString();
    await reopenIfEmptied(trx, intake, item, !isEmptyValue(checked.value));
    if (def.type === 'secret') {
      const sealed = encryptSecret(
        secretKeyOf(services),
        checked.value as string,
        secretContext(intake.id, key),
      );
      await recordSavedAnswer(trx, intake.id, key, { sealedSecret: sealed }, now);
    } else {
      await recordSavedAnswer(trx, intake.id, key, { value: checked.value }, now);
    }
    await settleIntake(trx, world, intake, before, true);
  });
  return portalItem(db, found.id, key);
}

/** A submission waiting for review that the client empties is open again (statusAfterClientChange). */
async function reopenIfEmptied(
  trx: Kysely<Database>,
  intake: IntakeRow,
  item: ItemRow,
  hasContentNow: boolean,
): Promise<void> {
  const next = statusAfterClientChange(item.status, hasContentNow);
  if (next === item.status) return;
  await moveItemAfterClientChange(trx, intake.id, item.key, next);
  await cancelAutoApproval(trx, intake.id, item.key);
}

async function portalItem(db: Kysely<Database>, intakeId: string, key: string) {
  const intake = await findIntakeById(db, intakeId);
  if (!intake) throw new ApiError('not_found', 'This intake no longer exists.');
  const item = await requireItem(db, intake, key);
  return toPortalItem(item, await filesOf(db, intakeId, key));
}

/** What the client has put into an item, as the submission checks see it (a secret's text stays sealed). */
function suppliedOf(item: ItemRow, fileCount: number): { value: unknown; fileCount: number } {
  const def = item.definition;
  if (def.type === 'secret') {
    return { value: item.secret_ciphertext === null ? undefined : '(sealed)', fileCount };
  }
  return {
    value: item.value ?? undefined,
    fileCount,
  };
}

function checkItemSubmission(item: ItemRow, fileCount: number, validateSchema: SchemaValidator): Check<null> {
  const def = item.definition;
  return checkSubmission(
    def,
    suppliedOf(item, isFileType(def.type) ? fileCount : 0),
    def.type === 'secret' ? () => undefined : validateSchema,
  );
}

/**
 * The schema checks of these items' saved values, run before the intake is locked: a costly value
 * is checked in a worker under VALIDATION_TIME_BUDGET_MS (lib/schema-budget.ts), and no lock or
 * transaction waits for it. The submission checks inside the lock answer from these results.
 */
async function schemaChecksOf(services: AppServices, items: ItemRow[]): Promise<SchemaValidator> {
  const pairs = items.flatMap((item) => {
    const { schema, type } = item.definition;
    return type === 'structured' && schema && item.value !== null && item.value !== undefined
      ? [{ schema, value: item.value }]
      : [];
  });
  return services.schemaChecks.prepared(pairs);
}

/** Marks a checked item submitted: history, item.submitted and the auto-approval timer, in `trx`. */
async function recordSubmission(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  item: ItemRow,
  now: Date,
): Promise<void> {
  // What the client sends now has not been shown to anyone: a secret is revealed once more.
  await recordItemSubmitted(trx, intake.id, item.key, {
    at: now.toISOString(),
    secret: item.definition.type === 'secret',
  });
  await scheduleAutoApproval(trx, world, intake, item.key, now);
  await recordItemHistory(trx, world, { intakeId: intake.id, itemKey: item.key, action: 'submitted' });
  await emit(trx, world, intake, 'item.submitted', {
    item_key: item.key,
    item_type: item.definition.type,
    status: 'submitted',
    submitted_at: now.toISOString(),
  });
}

/** POST /portal/api/:id/items/:key/submit. */
export async function submitItem(services: AppServices, id: string, key: string) {
  const { db, intake: found, world } = await clientContext(services, id);
  const validateSchema = await schemaChecksOf(services, [await requireItem(db, found, key)]);
  await withLockedIntake(db, found, async (trx, intake) => {
    const item = await requireItem(trx, intake, key);
    const move = itemTransition(item.status, 'submit');
    if (!move.ok) throw new ApiError('conflict', `${key}: ${move.reason}.`);
    const files = isFileType(item.definition.type) ? await filesOf(trx, intake.id, key) : [];
    const checked = checkItemSubmission(item, files.length, validateSchema);
    if (!checked.ok) throw new ApiError('unprocessable', `${key}.${checked.constraint}: ${checked.message}`);
    const before = itemStates(await itemsOf(trx, intake.id));
    await recordSubmission(trx, world, intake, item, world.clock.now());
    await settleIntake(trx, world, intake, before, true);
  });
  return portalItem(db, found.id, key);
}

/**
 * POST /portal/api/:id/submit: the page's one send. Every item with a saved answer the client has
 * not sent yet is submitted, in one transaction; an answer that breaks a constraint stays unsent and
 * is named with the reason, without holding back the others.
 */
export async function submitAll(services: AppServices, id: string): Promise<z.infer<typeof SubmitAllResult>> {
  const { db, intake: found, world } = await clientContext(services, id);
  const validateSchema = await schemaChecksOf(services, clientItems(await itemsOf(db, found.id)));
  return withLockedIntake(db, found, async (trx, intake) => {
    const all = await itemsOf(trx, intake.id);
    const items = clientItems(all);
    const files = await filesOf(trx, intake.id);
    const fileCount = (key: string) => files.filter((f) => f.item_key === key).length;
    const before = itemStates(all);
    const now = world.clock.now();
    const submitted: string[] = [];
    const invalid: { item_key: string; message: string }[] = [];
    const outcome = new Map<string, ItemStatus>();
    for (const item of items) {
      const status = item.status;
      outcome.set(item.key, status);
      const answer = {
        status,
        hasContent: hasContent(item, fileCount(item.key)),
        saved_at: item.saved_at,
        submitted_at: item.submitted_at,
      };
      if (!unsentAnswer(answer)) continue;
      const checked = checkItemSubmission(item, fileCount(item.key), validateSchema);
      if (!checked.ok) {
        invalid.push({
          item_key: item.key,
          message: `${item.key}.${checked.constraint}: ${checked.message}`,
        });
        continue;
      }
      await recordSubmission(trx, world, intake, item, now);
      submitted.push(item.key);
      outcome.set(item.key, 'submitted');
    }
    if (submitted.length > 0) await settleIntake(trx, world, intake, before, true);
    const needed = items
      .filter((item) => stillNeeded(item.definition.required, outcome.get(item.key) ?? 'pending'))
      .map((item) => item.key);
    return { submitted, still_needed: needed, invalid };
  });
}

function hasContent(item: ItemRow, fileCount: number): boolean {
  return fileCount > 0 || !isEmptyValue(suppliedOf(item, 0).value);
}

export interface IncomingFile {
  stream: Readable;
  filename: string;
  declaredBytes: number | undefined;
}

/** How large one file of this item may be: the smaller of max_bytes and the plan's per-file limit. */
export interface UploadAllowance {
  maxBytes: number;
  limitName: string;
  plan: Plan;
  /** Files the item holds now, and the most it takes. */
  filesAlready: number;
  maxCount: number;
  /** A one-file item (file, image): a new upload replaces the file it holds. */
  replaces: boolean;
}

/**
 * A file or image item holds one file: choosing another replaces it in one step (the old file goes
 * in the transaction that records the new one). A file_list counts to its max_count instead.
 */
function replacesOnUpload(def: { type: string; constraints: { max_count?: number | undefined } }): boolean {
  return def.type !== 'file_list' && (def.constraints.max_count ?? 1) === 1;
}

/**
 * Whether the client may add a file to this item now (the intake open, the item a file item that is
 * not submitted), and how large it may be. Upload routes ask before they accept any bytes.
 */
export async function uploadAllowance(
  services: AppServices,
  id: string,
  key: string,
): Promise<UploadAllowance> {
  const { db, intake } = await clientContext(services, id);
  const item = await requireItem(db, intake, key);
  const def = item.definition;
  if (!isFileType(def.type))
    throw new ApiError('unprocessable', `${key} is a ${def.type} item: it takes a value, not files.`);
  assertItemChangeable(item, 'save');
  const account = await db
    .selectFrom('accounts')
    .select('plan')
    .where('id', '=', intake.account_id)
    .executeTakeFirstOrThrow();
  const plan = planOf(account.plan);
  const itemLimit = def.constraints.max_bytes;
  const maxBytes = Math.min(itemLimit ?? Infinity, plan.max_file_bytes);
  const limitName =
    itemLimit !== undefined && itemLimit <= plan.max_file_bytes
      ? `max_bytes (${itemLimit} bytes)`
      : `the ${plan.name} plan's per-file limit (${plan.max_file_bytes} bytes)`;
  const filesAlready = (await filesOf(db, intake.id, key)).length;
  const maxCount = def.constraints.max_count ?? (def.type === 'file_list' ? Infinity : 1);
  return { maxBytes, limitName, plan, filesAlready, maxCount, replaces: replacesOnUpload(def) };
}

/**
 * POST /portal/api/:id/items/:key/files: streams the upload to a temp file (413 as soon as it passes
 * max_bytes or the plan's per-file limit), then hands it to acceptReceivedFile.
 */
export async function uploadFile(services: AppServices, id: string, key: string, incoming: IncomingFile) {
  const { maxBytes, limitName } = await uploadAllowance(services, id, key);
  if (incoming.declaredBytes !== undefined && incoming.declaredBytes > maxBytes) {
    incoming.stream.resume();
    throw new ApiError('payload_too_large', `The file exceeds ${limitName}.`);
  }
  const upload = await receiveUpload(incoming.stream, {
    maxBytes,
    limitName,
    tmpDir: join(services.config.dataDir, 'tmp'),
  });
  return acceptReceivedFile(services, id, key, { ...upload, filename: incoming.filename });
}

/** A complete file already on local disk (a streamed upload, a finished tus upload). */
export interface ReceivedFile {
  tmpPath: string;
  sha256: string;
  filename: string;
}

/**
 * Turns a received temp file into a file of the item: inspects it by content, sanitizes SVG, checks
 * the item's constraints, then moves it into storage and records it. The temp file is gone afterwards,
 * whether accepted or refused.
 */
export async function acceptReceivedFile(
  services: AppServices,
  id: string,
  key: string,
  received: ReceivedFile,
) {
  try {
    const { maxBytes, limitName, plan } = await uploadAllowance(services, id, key);
    const { intake, world } = await clientContext(services, id);
    const name = safeFileName(received.filename);
    let facts = await inspectFile(received.tmpPath, name, services.config.images);
    if (facts.bytes > maxBytes) throw new ApiError('payload_too_large', `The file exceeds ${limitName}.`);
    if (facts.format === 'svg') facts = await sanitizeUploadedSvg(received.tmpPath, facts);
    const fileId = newId('file');
    const storageKey = newStorageKey();
    // Stored before the transaction, so no lock is held while bytes move; removed again if it fails.
    await storeUpload(services.storage, received.tmpPath, storageKey);
    try {
      return await recordUpload(services, world, intake, key, {
        fileId,
        storageKey,
        name,
        facts,
        sha256: received.sha256,
        plan,
      });
    } catch (error) {
      await services.storage.delete(storageKey);
      throw error;
    }
  } finally {
    await discardUpload(received.tmpPath);
  }
}

interface StoredUpload {
  fileId: string;
  storageKey: string;
  name: string;
  facts: FileFacts;
  sha256: string;
  plan: Plan;
}

async function recordUpload(
  services: AppServices,
  world: World,
  intake: IntakeRow,
  key: string,
  upload: StoredUpload,
) {
  const { facts, plan } = upload;
  return withLockedIntake(services.db.kysely, intake, async (trx, locked) => {
    assertClientMayWork(locked);
    const item = await requireItem(trx, locked, key);
    assertItemChangeable(item, 'save');
    const def = item.definition;
    const already = await filesOf(trx, locked.id, key);
    const replaced = replacesOnUpload(def) ? already : [];
    const checked = checkFile(def, facts, already.length - replaced.length);
    if (!checked.ok) throw new ApiError('unprocessable', `${key}.${checked.constraint}: ${checked.message}`);
    const now = world.clock.now();
    const freed = replaced.reduce((sum, f) => sum + Number(f.size), 0);
    await assertStorageRoom(trx, world, plan, facts.bytes - freed, now);
    const row: FileRow = {
      id: upload.fileId,
      intake_id: locked.id,
      account_id: locked.account_id,
      livemode: locked.livemode,
      item_key: key,
      storage_key: upload.storageKey,
      name: upload.name,
      size: facts.bytes,
      content_type: facts.contentType,
      width: facts.width ?? null,
      height: facts.height ?? null,
      sha256: upload.sha256,
      created_at: now.toISOString(),
    };
    const before = itemStates(await itemsOf(trx, locked.id));
    if (replaced.length > 0) {
      await deleteFiles(
        trx,
        locked.id,
        replaced.map((f) => f.id),
      );
      await deleteStoredFilesAfterCommit(trx, world, locked.id, replaced);
    }
    await insertFile(trx, row);
    await addUsage(trx, world, 'storage_bytes', facts.bytes - freed, now);
    await recordAnswerChanged(trx, locked.id, key, now.toISOString());
    await settleIntake(trx, world, locked, before, true);
    return toFileRecord(row);
  });
}

/**
 * A resumable upload's reservation counts this long: as long as an unfinished upload is kept (the
 * sweep_abandoned_uploads job removes both after a day).
 */
export const UPLOAD_RESERVATION_MS = 24 * 60 * 60 * 1000;

/**
 * The storage quota holds stored files plus the bytes reserved by unfinished resumable uploads; test
 * mode has its own, smaller quota (storageQuota).
 */
async function assertStorageRoom(
  db: Kysely<Database>,
  world: World,
  plan: Plan,
  addedBytes: number,
  now: Date,
): Promise<void> {
  const quota = storageQuota(plan, world.livemode);
  const used = await usageValue(db, world, 'storage_bytes', now);
  const reserved = await reservedBytes(db, world, new Date(now.getTime() - UPLOAD_RESERVATION_MS));
  if (used + reserved + addedBytes > quota) {
    throw new ApiError(
      'quota_exceeded',
      `The account's ${world.livemode ? '' : 'test-mode '}file storage quota (${quota} bytes on the ${plan.name} plan) is full${reserved > 0 ? `, counting ${reserved} bytes of unfinished uploads` : ''}.`,
    );
  }
}

/**
 * A resumable upload starts: its declared length is checked against the quota and reserved until
 * it finishes, is cancelled or expires.
 */
export async function reserveUploadSpace(
  services: AppServices,
  id: string,
  uploadId: string,
  bytes: number,
): Promise<void> {
  const { db, intake, world } = await clientContext(services, id);
  const account = await db
    .selectFrom('accounts')
    .select('plan')
    .where('id', '=', intake.account_id)
    .executeTakeFirstOrThrow();
  const now = world.clock.now();
  await withLockedIntake(db, intake, async (trx) => {
    await assertStorageRoom(trx, world, planOf(account.plan), bytes, now);
    await insertReservation(trx, { uploadId, world, intakeId: intake.id, bytes, at: now });
  });
}

/** The upload finished, was cancelled, or expired: its bytes are no longer held. */
export async function releaseUploadSpace(services: AppServices, uploadId: string): Promise<void> {
  await deleteReservation(services.db.kysely, uploadId);
}

export async function releaseExpiredUploadSpace(services: AppServices): Promise<void> {
  await deleteExpiredReservations(
    services.db.kysely,
    new Date(services.clock.now().getTime() - UPLOAD_RESERVATION_MS),
  );
}

/** DELETE /portal/api/:id/items/:key/files/:file_id: only while the item is not submitted. */
export async function removeFile(
  services: AppServices,
  id: string,
  key: string,
  fileId: string,
): Promise<void> {
  const { db, intake: found, world } = await clientContext(services, id);
  await withLockedIntake(db, found, async (trx, intake) => {
    const item = await requireItem(trx, intake, key);
    assertItemChangeable(item, 'remove_file');
    const file = await findItemFile(trx, intake.id, key, fileId);
    if (!file) throw new ApiError('not_found', `No file ${fileId} in item ${key}.`);
    const before = itemStates(await itemsOf(trx, intake.id));
    const now = world.clock.now();
    await deleteFiles(trx, intake.id, [fileId]);
    await addUsage(trx, world, 'storage_bytes', -Number(file.size), now);
    // A removal is a change of the answer: a sent item with it has something to send again.
    await recordAnswerChanged(trx, intake.id, key, now.toISOString());
    await reopenIfEmptied(trx, intake, item, (await filesOf(trx, intake.id, key)).length > 0);
    await settleIntake(trx, world, intake, before, true);
    await deleteStoredFilesAfterCommit(trx, world, intake.id, [file]);
  });
}
