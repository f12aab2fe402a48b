/**
 * Editing an intake after it was sent: its settings (PATCH /v1/intakes/:id) and its items
 * (PATCH / DELETE /v1/intakes/:id/items/:key). Each change runs under the intake's lock, in one
 * transaction with the reminders it re-plans and the intake status it settles.
 */
import type { Kysely, Updateable } from 'kysely';
import type { z } from 'zod';
import type { Database, IntakesTable } from '../../db/schema.js';
import { proposalProblems } from '../../domain/decisions.js';
import { intakeAcceptsOwnerChanges } from '../../domain/intake-state.js';
import { answerLostBy, type StoredAnswer } from '../../domain/item-edit.js';
import { conditionProblems } from '../../domain/conditions.js';
import { definitionProblems, describeProblems, type ItemDefinition } from '../../domain/items.js';
import { ApiError } from '../../http/errors.js';
import { cancelJobs } from '../../jobs/jobs.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import type { AppServices } from '../../services.js';
import type { SchemaValidator } from '../../domain/values.js';
import { ask, raise } from '../../kernel/domain-events.js';
import { ChaseSettingsFields, type ChaseSettingsInput } from './chase-settings.js';
import { deleteStoredFilesAfterCommit } from '../files/stored-files.service.js';
import { requireFolder } from '../folders/folders.service.js';
import { historyOf } from '../history/history.service.js';
import { addUsage } from '../usage/usage.service.js';
import type { UpdateIntakeBody, UpdateItemBody } from './editing.schemas.js';
import { itemStates, settleIntake } from './intakes.lifecycle.js';
import { toIntakeItem } from './intakes.mappers.js';
import {
  filesOf,
  findItem,
  itemsOf,
  updateIntake,
  updateItem,
  type FileRow,
  type IntakeRow,
  type ItemRow,
} from './intakes.repository.js';
import { AUTO_APPROVE, itemSubject } from './intakes.jobs.js';
import { getIntake, requireIntake } from './intakes.service.js';
import { requireItem, withLockedIntake } from './review.service.js';
import type { World } from '../../kernel/world.js';

type Body<T extends z.ZodType> = z.output<T>;

function assertOwnerMayChange(intake: IntakeRow): void {
  const allowed = intakeAcceptsOwnerChanges(intake.status);
  if (!allowed.ok) throw new ApiError('conflict', `Cannot change the intake: ${allowed.reason}.`);
}

const CHASE_FIELDS = ['chase_schedule', ...Object.keys(ChaseSettingsFields)];

/**
 * The chase settings after the patch: what is stored, overridden by what the body gives. An interval
 * stored for a custom schedule is dropped when the schedule stops being custom.
 */
async function mergedChaseInput(
  db: Kysely<Database>,
  intake: IntakeRow,
  body: Record<string, unknown>,
): Promise<ChaseSettingsInput> {
  const current = await ask(db, 'intakeChaseSettings', { intakeId: intake.id });
  const given = Object.fromEntries(
    CHASE_FIELDS.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]),
  );
  const merged: Record<string, unknown> = { ...current, ...given };
  const schedule = (given.chase_schedule as string | undefined) ?? intake.chase_schedule;
  if (
    schedule !== 'custom' &&
    given.chase_interval === undefined &&
    given.chase_interval_unit === undefined
  ) {
    delete merged.chase_interval;
    delete merged.chase_interval_unit;
  }
  return merged;
}

/** PATCH /v1/intakes/:id. */
export async function updateIntakeSettings(
  services: AppServices,
  world: World,
  planId: string,
  id: string,
  body: Body<typeof UpdateIntakeBody>,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const today = world.clock.now().toISOString().slice(0, 10);
  if (body.due_date && body.due_date < today && body.due_date !== found.due_date) {
    throw new ApiError('unprocessable', `due_date: ${body.due_date} is in the past.`);
  }
  await withLockedIntake(db, found, async (trx, intake) => {
    assertOwnerMayChange(intake);
    // Inside the lock, so a folder deleted meanwhile cannot be filed into.
    if (typeof body.folder_id === 'string') await requireFolder(trx, world, body.folder_id);
    const patch = intakePatch(body, world.clock.now().toISOString());
    await updateIntake(trx, intake.id, patch);
    const record = body as Record<string, unknown>;
    const chaseChanged = CHASE_FIELDS.some((k) => record[k] !== undefined);
    const timingChanged =
      (body.due_date !== undefined && body.due_date !== intake.due_date) ||
      (body.client?.timezone !== undefined && body.client.timezone !== intake.client_timezone);
    if (chaseChanged || timingChanged) {
      const chaseInput = await mergedChaseInput(trx, intake, record);
      await raise(trx, 'intakeScheduleChanged', {
        world,
        intake: { ...intake, ...patch },
        chaseInput,
        planId,
      });
    }
  });
  return getIntake(services, world, found.id);
}

function intakePatch(body: Body<typeof UpdateIntakeBody>, at: string): Updateable<IntakesTable> {
  const patch: Updateable<IntakesTable> = { updated_at: at };
  if (body.project_name !== undefined) patch.project_name = body.project_name;
  if (body.due_date !== undefined) patch.due_date = body.due_date;
  if (body.client_brief !== undefined) patch.client_brief = body.client_brief || null;
  if (body.folder_id !== undefined) patch.folder_id = body.folder_id;
  if (body.chase_schedule !== undefined) patch.chase_schedule = body.chase_schedule;
  const client = body.client;
  if (client?.name !== undefined) patch.client_name = client.name;
  if (client?.phone !== undefined) patch.client_phone = client.phone;
  if (client?.language !== undefined) patch.client_language = client.language;
  if (client?.timezone !== undefined) patch.client_timezone = client.timezone;
  if (client?.country !== undefined) patch.client_country = client.country;
  return patch;
}

/** The definition after a PATCH: the stored one with the given fields replaced (null removes). */
function patchedDefinition(before: ItemDefinition, body: Body<typeof UpdateItemBody>): ItemDefinition {
  const after: ItemDefinition = { ...before };
  if (body.type !== undefined) after.type = body.type;
  if (body.label !== undefined) after.label = body.label;
  if (body.required !== undefined) after.required = body.required;
  if (body.constraints !== undefined) after.constraints = body.constraints;
  if (body.help !== undefined) after.help = body.help ?? undefined;
  if (body.example !== undefined) after.example = body.example ?? undefined;
  if (body.schema !== undefined) after.schema = body.schema ?? undefined;
  if (body.options !== undefined) after.options = body.options ?? undefined;
  if (body.section !== undefined) after.section = body.section ?? undefined;
  if (body.show_if !== undefined) after.show_if = body.show_if ?? undefined;
  return after;
}

/**
 * Whether the stored structured value passes the changed schema, checked before the intake is
 * locked: a costly value is checked in a worker under VALIDATION_TIME_BUDGET_MS
 * (lib/schema-budget.ts), and the check inside the lock answers from this result.
 */
async function schemaCheckOfChange(
  services: AppServices,
  item: ItemRow | undefined,
  body: Body<typeof UpdateItemBody>,
): Promise<SchemaValidator> {
  const after = item ? patchedDefinition(item.definition, body) : undefined;
  const pairs =
    item && after?.type === 'structured' && after.schema && item.value !== null && item.value !== undefined
      ? [{ schema: after.schema, value: item.value as unknown }]
      : [];
  return services.schemaChecks.prepared(pairs);
}

function storedAnswer(item: ItemRow, files: FileRow[]): StoredAnswer {
  return {
    status: item.status,
    value: item.value ?? undefined,
    secretSaved: item.secret_ciphertext !== null,
    files,
  };
}

/** The item starts over: no value, no files, pending; its auto-approval is called off. */
async function discardAnswer(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  key: string,
  files: FileRow[],
): Promise<void> {
  await updateItem(trx, intake.id, key, {
    status: 'pending',
    value: null,
    secret_ciphertext: null,
    revision_note: null,
    saved_at: null,
    submitted_at: null,
    approved_at: null,
    approval_seq: null,
    secret_revealed_at: null,
    decided_by: null,
  });
  await removeFileRows(trx, world, intake.id, files);
  await cancelJobs(trx, { subjectId: itemSubject(intake.id, key), kind: AUTO_APPROVE.kind });
}

async function removeFileRows(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  files: FileRow[],
): Promise<void> {
  if (files.length === 0) return;
  await trx
    .deleteFrom('item_files')
    .where('intake_id', '=', intakeId)
    .where(
      'id',
      'in',
      files.map((f) => f.id),
    )
    .execute();
  const bytes = files.reduce((sum, f) => sum + Number(f.size), 0);
  if (bytes > 0) await addUsage(trx, world, 'storage_bytes', -bytes, world.clock.now());
  await deleteStoredFilesAfterCommit(trx, world, intakeId, files);
}

/** PATCH /v1/intakes/:id/items/:key. */
export async function updateItemDefinition(
  services: AppServices,
  world: World,
  id: string,
  key: string,
  body: Body<typeof UpdateItemBody>,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const validateSchema = await schemaCheckOfChange(services, await findItem(db, found.id, key), body);
  await withLockedIntake(db, found, async (trx, intake) => {
    assertOwnerMayChange(intake);
    const item = await requireItem(trx, intake, key);
    const before = item.definition;
    const after = patchedDefinition(before, body);
    const all = await itemsOf(trx, intake.id);
    const others = all.filter((row) => row.key !== key).map((row) => row.key);
    // The conditions of the whole list as it would be: the changed item in its place.
    const listAfter = all.map((row) => (row.key === key ? after : row.definition));
    const problems = [
      ...definitionProblems([after], compileJsonSchema, others),
      ...conditionProblems(listAfter),
      ...proposalProblems([after]),
    ];
    if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
    const files = await filesOf(trx, intake.id, key);
    const lost = answerLostBy(before, after, storedAnswer(item, files), validateSchema);
    if (lost && body.discard_submitted_value !== true) {
      throw new ApiError(
        'item_answer_would_be_discarded',
        `The client's answer to ${key} would no longer be valid (${lost}). Send discard_submitted_value: true to change the item and discard the answer.`,
      );
    }
    const states = itemStates(await itemsOf(trx, intake.id));
    await updateItem(trx, intake.id, key, { definition: after });
    if (lost) await discardAnswer(trx, world, intake, key, files);
    await settleIntake(trx, world, intake, states, intake.status !== 'sent');
  });
  const item = await findItem(db, found.id, key);
  if (!item) throw new ApiError('not_found', `Intake ${found.id} has no item with key ${key}.`);
  return toIntakeItem(item, (await historyOf(db, found.id)).get(key) ?? []);
}

/** DELETE /v1/intakes/:id/items/:key: only an item the client has not submitted (409 otherwise). */
export async function deleteItem(
  services: AppServices,
  world: World,
  id: string,
  key: string,
): Promise<void> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await withLockedIntake(db, found, async (trx, intake) => {
    assertOwnerMayChange(intake);
    const item = await requireItem(trx, intake, key);
    if (item.submitted_at !== null || item.status !== 'pending' || item.decided_by !== null) {
      throw new ApiError(
        'conflict',
        `${key} has a submission (status ${item.status}); it cannot be deleted. Change it with PATCH instead.`,
      );
    }
    const all = await itemsOf(trx, intake.id);
    if (all.length === 1)
      throw new ApiError('conflict', `${key} is the intake's only item; an intake needs one.`);
    const dependants = all.filter((row) => row.definition.show_if?.item_key === key).map((row) => row.key);
    if (dependants.length > 0) {
      throw new ApiError(
        'conflict',
        `${dependants.join(', ')} ${dependants.length > 1 ? 'are' : 'is'} shown only depending on ${key}; change or remove their show_if first.`,
      );
    }
    const files = await filesOf(trx, intake.id, key);
    const states = itemStates(all);
    await removeFileRows(trx, world, intake.id, files);
    await cancelJobs(trx, { subjectId: itemSubject(intake.id, key), kind: AUTO_APPROVE.kind });
    await trx.deleteFrom('intake_items').where('intake_id', '=', intake.id).where('key', '=', key).execute();
    await settleIntake(trx, world, intake, states, intake.status !== 'sent');
  });
}
