import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { archiveTransition, intakeAcceptsOwnerChanges, sendTransition } from '../../domain/intake-state.js';
import { proposalProblems } from '../../domain/decisions.js';
import { describeProblems, isOwnerItem, requestProblems, type ItemDefinition } from '../../domain/items.js';
import { planOf } from '../../domain/plans.js';
import { ApiError, notFound } from '../../http/errors.js';
import { idempotentCreate } from '../../http/idempotency.js';
import { newId } from '../../lib/ids.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { deleteHistoryOf, historyOf } from '../history/history.service.js';
import { findTemplateItems } from '../templates/templates.service.js';
import { addUsage, addUsageAndRead } from '../usage/usage.service.js';
import { deleteStoredFilesAfterCommit } from '../files/stored-files.service.js';
import { requireFolder } from '../folders/folders.service.js';
import { ask, raise } from '../../kernel/domain-events.js';
import { chasePlanValues } from './chase-settings.js';
import { followUpFor } from './follow-up.service.js';
import { emit, itemStates, settleIntake } from './intakes.lifecycle.js';
import { portalUrl, toCreatedIntake, toIntake, toStatusObject } from './intakes.mappers.js';
import {
  deleteIntakeRows,
  lockIntakeForDeletion,
  filesOf,
  findIntake,
  insertIntake,
  insertItems,
  itemRows,
  writtenItems,
  itemsOf,
  listIntakes,
  lockIntake,
  updateIntake,
  type IntakeRow,
} from './intakes.repository.js';
import type {
  AddItemsBody,
  CreateIntakeBody,
  CreatedIntake,
  Intake,
  IntakeListQuery,
} from './intakes.schemas.js';
import type { World } from '../../kernel/world.js';

type Body<T extends z.ZodType> = z.output<T>;

export async function requireIntake(db: Kysely<Database>, world: World, id: string): Promise<IntakeRow> {
  const intake = await findIntake(db, world, id);
  if (!intake) throw notFound('intake', id);
  return intake;
}

function assertValidDefinitions(
  items: readonly ItemDefinition[],
  existing: readonly ItemDefinition[] = [],
): void {
  const problems = [...requestProblems(items, compileJsonSchema, existing), ...proposalProblems(items)];
  if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
}

async function loadCreated(
  services: AppServices,
  world: World,
  id: string,
): Promise<Omit<z.infer<typeof CreatedIntake>, 'follow_up'>> {
  const db = services.db.kysely;
  const intake = await requireIntake(db, world, id);
  return toCreatedIntake(services.config.appUrl, intake, await itemsOf(db, id));
}

/** POST /v1/intakes: validates, checks the month's quota (live mode), creates, and sends unless send is false. */
export async function createIntake(
  services: AppServices,
  world: World,
  plan: string,
  apiKeyId: string,
  body: Body<typeof CreateIntakeBody>,
  idempotencyKey: string | undefined,
): Promise<{ created: boolean; value: z.infer<typeof CreatedIntake> }> {
  const db = services.db.kysely;
  if (body.items && body.template_id) {
    throw new ApiError('invalid_request', 'Give either items or template_id, not both.');
  }
  if (!body.items && !body.template_id) {
    throw new ApiError(
      'invalid_request',
      'items: required (an array of item definitions) unless template_id is given.',
    );
  }
  const items = body.items ?? (await findTemplateItems(db, world, body.template_id ?? ''));
  assertValidDefinitions(items);
  const now = world.clock.now();
  if (body.due_date && body.due_date < now.toISOString().slice(0, 10)) {
    throw new ApiError('unprocessable', `due_date: ${body.due_date} is in the past.`);
  }
  if (body.retention?.mode === 'on_delivery' && body.retention.days !== undefined) {
    throw new ApiError('unprocessable', 'retention.days applies to mode days only.');
  }
  const chasePlan = chasePlanValues(body, plan);
  if (body.folder_id) await requireFolder(db, world, body.folder_id);
  checkAlsoNotify(body.client.email, body.also_notify ?? []);
  const alsoNotify = body.also_notify ?? [];

  const outcome = await idempotentCreate(
    db,
    { apiKeyId, accountId: world.accountId, livemode: world.livemode },
    idempotencyKey,
    body,
    now,
    {
      resourceType: 'intake',
      load: (id) => loadCreated(services, world, id),
      create: async (trx) => {
        const id = newId('in');
        const at = now.toISOString();
        const send = body.send ?? true;
        const intake: IntakeRow = {
          id,
          account_id: world.accountId,
          livemode: world.livemode ? 1 : 0,
          project_name: body.project_name,
          client_email: body.client.email.toLowerCase(),
          client_name: body.client.name ?? null,
          client_language: body.client.language ?? 'en',
          client_phone: body.client.phone ?? null,
          client_timezone: body.client.timezone ?? null,
          client_country: body.client.country ?? null,
          status: send ? 'sent' : 'draft',
          chase_schedule: body.chase_schedule ?? 'default',
          due_date: body.due_date ?? null,
          retention_mode: body.retention?.mode ?? 'days',
          retention_days: body.retention?.mode === 'on_delivery' ? null : (body.retention?.days ?? 90),
          retention_anonymize: body.retention?.anonymize ? 1 : 0,
          template_id: body.template_id ?? null,
          client_brief: body.client_brief ?? null,
          folder_id: body.folder_id ?? null,
          approval_counter: 0,
          results_cursor: 0,
          awaiting_review: 0,
          created_at: at,
          updated_at: at,
          sent_at: send ? at : null,
          completed_at: null,
          archived_at: null,
          client_first_viewed_at: null,
          client_last_seen_at: null,
          results_collected_at: null,
          purged_at: null,
          anonymized_at: null,
        };
        await insertIntake(trx, intake);
        const rows = itemRows(world, id, items, 0, at);
        await insertItems(trx, rows);
        // Created sent, the intake is on its way with this event alone (no intakeSent follows).
        await raise(trx, 'intakeCreated', {
          world,
          intake,
          items: writtenItems(rows),
          chasePlan,
          alsoNotify,
        });
        if (send) await emitSent(trx, world, intake);
        await auditInTransaction(trx, id);
        // Last: the month's counter is one row per account, and its update holds that row until the
        // commit. Every live creation of the account waits for it, for the commit alone this way.
        if (world.livemode) await consumeIntakeQuota(trx, world, plan, now);
        return { id, value: toCreatedIntake(services.config.appUrl, intake, rows) };
      },
    },
  );
  if (outcome.created) await changeCommitted(services, world, outcome.value.intake_id);
  const followUp = await followUpFor(services, world, plan, body.due_date ?? null);
  return { created: outcome.created, value: { ...outcome.value, follow_up: followUp } };
}

async function consumeIntakeQuota(
  db: Kysely<Database>,
  world: World,
  plan: string,
  now: Date,
): Promise<void> {
  const limit = planOf(plan).quotas.intakes_per_month;
  const used = await addUsageAndRead(db, world, 'intakes', 1, now);
  if (used > limit) {
    throw new ApiError(
      'quota_exceeded',
      `This month's quota of ${limit} intakes on the ${planOf(plan).name} plan is used up; upgrade the plan or wait for next month.`,
    );
  }
}

async function emitSent(db: Kysely<Database>, world: World, intake: IntakeRow): Promise<void> {
  await emit(db, world, intake, 'intake.sent', {
    project_name: intake.project_name,
    client_email: intake.client_email,
    sent_at: world.clock.now().toISOString(),
  });
}

export async function listIntakesOf(
  services: AppServices,
  world: World,
  query: Body<typeof IntakeListQuery>,
) {
  if (query.starting_after !== undefined && query.offset > 0) {
    throw new ApiError('invalid_request', 'offset and starting_after: page by one of them, not both.');
  }
  // One intake past the page: whether more follow.
  const { total, rows, cursorFound } = await listIntakes(services.db.kysely, world, {
    status: query.status,
    clientEmail: query.client_email,
    folderId: query.folder_id,
    text: query.q,
    awaitingReview: query.awaiting_review,
    limit: query.limit + 1,
    offset: query.offset,
    startingAfter: query.starting_after,
  });
  if (!cursorFound) {
    throw new ApiError('invalid_request', `starting_after: no intake with id ${query.starting_after ?? ''}.`);
  }
  return {
    total,
    has_more: rows.length > query.limit,
    intakes: rows.slice(0, query.limit).map((r) => ({
      id: r.id,
      intake_id: r.id,
      projectName: r.project_name,
      clientEmail: r.client_email,
      status: r.status,
      createdAt: r.created_at,
      portal_url: portalUrl(services.config.appUrl, r.id),
      awaiting_review: r.awaiting_review,
    })),
  };
}

export async function getIntake(
  services: AppServices,
  world: World,
  id: string,
): Promise<z.infer<typeof Intake>> {
  const db = services.db.kysely;
  const intake = await requireIntake(db, world, id);
  // Independent reads side by side: on PostgreSQL each is a round trip.
  const [items, history, recipients] = await Promise.all([
    itemsOf(db, intake.id),
    historyOf(db, intake.id),
    ask(db, 'intakeRecipients', { world, intake }),
  ]);
  return toIntake(services.config.appUrl, intake, items, { history, recipients });
}

export async function getIntakeStatus(services: AppServices, world: World, id: string) {
  const db = services.db.kysely;
  const intake = await requireIntake(db, world, id);
  // Independent reads side by side: on PostgreSQL each is a round trip.
  const [items, { chases, recipients }] = await Promise.all([
    itemsOf(db, intake.id),
    ask(db, 'intakeReminders', { world, intake }),
  ]);
  return toStatusObject(intake, items, chases, recipients);
}

/** POST /v1/intakes/:id/items: new pending items; a completed intake reopens. */
export async function addItems(
  services: AppServices,
  world: World,
  id: string,
  body: Body<typeof AddItemsBody>,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const added = await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    const allowed = intakeAcceptsOwnerChanges(intake.status);
    if (!allowed.ok) throw new ApiError('conflict', `Items cannot be added: ${allowed.reason}.`);
    const existing = await itemsOf(trx, intake.id);
    assertValidDefinitions(
      body.items,
      existing.map((row) => row.definition),
    );
    const before = itemStates(existing);
    const at = world.clock.now().toISOString();
    const rows = itemRows(world, intake.id, body.items, existing.length, at);
    await insertItems(trx, rows);
    await settleIntake(trx, world, intake, before, intake.status !== 'sent');
    // Decisions are the owner's: adding only those tells the client nothing.
    const forClient = body.items.filter((def) => !isOwnerItem(def));
    if (forClient.length > 0) {
      const data = { item_keys: forClient.map((def) => def.key) };
      await ask(trx, 'notifyClient', { world, intake, notice: 'items_added', data });
    }
    await auditInTransaction(trx);
    return {
      intake_id: intake.id,
      items_added: rows.map((r) => ({ key: r.key, status: 'pending' as const })),
    };
  });
  await changeCommitted(services, world, found.id);
  return added;
}

export async function sendIntake(services: AppServices, world: World, id: string) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    const move = sendTransition(intake.status);
    if (!move.ok) throw new ApiError('conflict', `Cannot send: ${move.reason}.`);
    const at = world.clock.now().toISOString();
    await updateIntake(trx, intake.id, { status: move.next, sent_at: at, updated_at: at });
    await emitSent(trx, world, intake);
    await raise(trx, 'intakeSent', { world, intake: { ...intake, status: move.next, sent_at: at } });
    await auditInTransaction(trx);
  });
  await changeCommitted(services, world, found.id);
  return getIntake(services, world, found.id);
}

export async function archiveIntake(services: AppServices, world: World, id: string) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    // Deleted since it was looked up: nothing is left to change.
    if (!intake) throw notFound('intake', found.id);
    const move = archiveTransition(intake.status);
    if (move.ok && move.changed) {
      const at = world.clock.now().toISOString();
      await updateIntake(trx, intake.id, { status: 'archived', archived_at: at, updated_at: at });
      await raise(trx, 'intakeArchived', { world, intakeId: intake.id });
    }
    await auditInTransaction(trx);
  });
  return getIntake(services, world, found.id);
}

/** DELETE /v1/intakes/:id: every row and stored file of the intake is gone; storage usage goes down. */
export async function deleteIntake(services: AppServices, world: World, id: string): Promise<void> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntakeForDeletion(trx, found.id);
    // Deleted since it was looked up: nothing is left to delete.
    if (!intake) throw notFound('intake', found.id);
    const files = await filesOf(trx, intake.id);
    await raise(trx, 'intakeDeleted', { world, intakeId: intake.id });
    await deleteIntakeRows(trx, intake.id);
    await deleteHistoryOf(trx, intake.id);
    const bytes = files.reduce((sum, f) => sum + Number(f.size), 0);
    if (bytes > 0) await addUsage(trx, world, 'storage_bytes', -bytes, world.clock.now());
    await deleteStoredFilesAfterCommit(trx, world, intake.id, files);
    await auditInTransaction(trx);
  });
}

/** After a change's commit: the work it queued (messages) may be done at once. */
export async function changeCommitted(services: AppServices, world: World, intakeId: string): Promise<void> {
  await raise(services.db.kysely, 'intakeChangeCommitted', { services, world, intakeId });
}

/** also_notify at creation: nobody twice, and never the client. */
function checkAlsoNotify(clientEmail: string, list: readonly { email: string }[]): void {
  const seen = new Set([clientEmail.toLowerCase()]);
  for (const [index, person] of list.entries()) {
    const email = person.email.toLowerCase();
    if (seen.has(email)) {
      throw new ApiError(
        'unprocessable',
        `also_notify[${index}].email: ${email} is already a recipient of this intake (the client or an earlier entry).`,
      );
    }
    seen.add(email);
  }
}

/** What other modules read of intakes (their rows are this module's). */
export {
  applicableItemKeys,
  canonicalIntakeId,
  clientItems,
  filesOf,
  findIntake,
  filesByIntake,
  filesOfIntake,
  findIntakeById,
  findIntakesWithSuppression,
  intakesPerDay,
  itemsByIntake,
  itemsOf,
  itemsOfIntakes,
  listIntakes,
  lockIntake,
  lockIntakeRow,
} from './intakes.repository.js';

/** Read and written by other modules through this module's surface (the rows are this module's). */
export {
  deleteFiles,
  findFile,
  findItemFile,
  insertFile,
  type FileRow,
  type IntakeRow,
  type IntakeWithSuppression,
  type ItemRow,
  referencedStorageKeys,
  existingFileIds,
} from './intakes.repository.js';
export {
  moveItemAfterClientChange,
  recordAnswerChanged,
  recordClientVisit,
  recordItemSubmitted,
  recordSavedAnswer,
} from './client-answers.js';
