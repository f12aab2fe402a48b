import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import {
  AUTO_APPROVE_AFTER_MS,
  intakeAcceptsOwnerChanges,
  itemTransition,
} from '../../domain/intake-state.js';
import { ApiError, notFound } from '../../http/errors.js';
import { cancelJobs, enqueueJob } from '../../jobs/jobs.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { ask } from '../../kernel/domain-events.js';
import { recordItemHistory } from '../history/history.service.js';
import { emit, itemStates, settleIntake } from './intakes.lifecycle.js';
import {
  findIntakeById,
  findItem,
  itemsOf,
  lockIntake,
  updateIntake,
  updateItem,
  type IntakeRow,
  type ItemRow,
} from './intakes.repository.js';
import { AUTO_APPROVE, itemSubject } from './intakes.jobs.js';
import { changeCommitted, requireIntake } from './intakes.service.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';

export async function requireItem(db: Kysely<Database>, intake: IntakeRow, key: string): Promise<ItemRow> {
  const item = await findItem(db, intake.id, key);
  if (!item) throw new ApiError('not_found', `Intake ${intake.id} has no item with key ${key}.`);
  return item;
}

/** Runs `work` on a freshly locked intake inside one transaction. */
export async function withLockedIntake<T>(
  db: Kysely<Database>,
  intake: IntakeRow,
  work: (trx: Kysely<Database>, locked: IntakeRow) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const locked = await lockIntake(trx, intake.id);
    if (!locked) throw notFound('intake', intake.id);
    const result = await work(trx, locked);
    await auditInTransaction(trx);
    return result;
  });
}

function assertOwnerMayChange(intake: IntakeRow): void {
  const allowed = intakeAcceptsOwnerChanges(intake.status);
  if (!allowed.ok) throw new ApiError('conflict', `Cannot change items: ${allowed.reason}.`);
}

async function approveLocked(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  item: ItemRow,
  auto: boolean,
  note: string | null = null,
): Promise<void> {
  const before = itemStates(await itemsOf(trx, intake.id));
  const now = world.clock.now().toISOString();
  const seq = intake.approval_counter + 1;
  await updateIntake(trx, intake.id, { approval_counter: seq, updated_at: now });
  await updateItem(trx, intake.id, item.key, {
    status: 'approved',
    approved_at: now,
    approval_seq: seq,
    // An approval without a note leaves no stale revision note showing to the client.
    review_note: note,
  });
  await recordItemHistory(trx, world, { intakeId: intake.id, itemKey: item.key, action: 'approved', note });
  await cancelJobs(trx, { subjectId: itemSubject(intake.id, item.key), kind: AUTO_APPROVE.kind });
  await emit(trx, world, intake, 'item.approved', {
    item_key: item.key,
    item_type: item.definition.type,
    status: 'approved',
    approved_at: now,
    auto_approved: auto,
  });
  await settleIntake(trx, world, intake, before, true);
}

/**
 * POST /v1/intakes/:id/items/:key/approve, with an optional note to the client. Approving an
 * approved item again changes nothing.
 */
export async function approveItem(
  services: AppServices,
  world: World,
  id: string,
  key: string,
  note: string | null = null,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await withLockedIntake(db, found, async (trx, intake) => {
    assertOwnerMayChange(intake);
    const item = await requireItem(trx, intake, key);
    const move = itemTransition(item.status, 'approve');
    if (!move.ok) throw new ApiError('conflict', `Cannot approve ${key}: ${move.reason}.`);
    if (move.changed) await approveLocked(trx, world, intake, item, false, note);
  });
  return { intake_id: found.id, item_key: key, status: 'approved' as const };
}

/** POST /v1/intakes/:id/revision: the item goes back to the client with a note. */
export async function requestRevision(
  services: AppServices,
  world: World,
  id: string,
  key: string,
  note: string,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const clientNotified = await withLockedIntake(db, found, async (trx, intake) => {
    assertOwnerMayChange(intake);
    const item = await requireItem(trx, intake, key);
    const move = itemTransition(item.status, 'request_revision');
    if (!move.ok) throw new ApiError('conflict', `Cannot request a revision of ${key}: ${move.reason}.`);
    const before = itemStates(await itemsOf(trx, intake.id));
    const now = world.clock.now().toISOString();
    await updateItem(trx, intake.id, key, {
      status: 'needs_revision',
      revision_note: note,
      review_note: note,
      approved_at: null,
      approval_seq: null,
    });
    await recordItemHistory(trx, world, {
      intakeId: intake.id,
      itemKey: key,
      action: 'revision_requested',
      note,
    });
    await cancelJobs(trx, { subjectId: itemSubject(intake.id, key), kind: AUTO_APPROVE.kind });
    await emit(trx, world, intake, 'item.revision_requested', {
      item_key: key,
      item_type: item.definition.type,
      status: 'needs_revision',
      note,
      requested_at: now,
    });
    await settleIntake(trx, world, intake, before, true);
    // The email is queued with the change; false when the address is suppressed (it bounced before).
    return ask(trx, 'notifyClient', { world, intake, notice: 'revision', data: { item_key: key, note } });
  });
  await changeCommitted(services, world, found.id);
  return {
    intake_id: found.id,
    item_key: key,
    status: 'needs_revision' as const,
    client_notified: clientNotified,
  };
}

/** Schedules the 72-hour auto-approval of a just-submitted item (inside the submission's transaction). */
/** Stops the 72-hour auto-approval of an item (its submission was withdrawn). */
export async function cancelAutoApproval(
  trx: Kysely<Database>,
  intakeId: string,
  key: string,
): Promise<void> {
  await cancelJobs(trx, { subjectId: itemSubject(intakeId, key), kind: AUTO_APPROVE.kind });
}

export async function scheduleAutoApproval(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  key: string,
  submittedAt: Date,
): Promise<void> {
  await cancelJobs(trx, { subjectId: itemSubject(intake.id, key), kind: AUTO_APPROVE.kind });
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: AUTO_APPROVE.kind,
    subjectId: itemSubject(intake.id, key),
    payload: { intake_id: intake.id, item_key: key, submitted_at: submittedAt.toISOString() },
    dueAt: realTimeOf(world, submittedAt.getTime() + AUTO_APPROVE_AFTER_MS),
  });
}

/** The auto_approve job: approves the item if it is still the same submission. */
export async function runAutoApproval(
  services: AppServices,
  payload: { intake_id: string; item_key: string; submitted_at: string },
): Promise<void> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, payload.intake_id);
  if (!intake || intake.status === 'archived') return;
  const world = await worldOfIntake(db, intake, { type: 'system', id: null }, services.clock);
  await withLockedIntake(db, intake, async (trx, locked) => {
    const item = await findItem(trx, locked.id, payload.item_key);
    if (!item || item.status !== 'submitted' || item.submitted_at !== payload.submitted_at) return;
    await approveLocked(trx, world, locked, item, true);
  });
}

/**
 * POST /v1/intakes/:id/approve: approves every submitted item (or the given ones) in one transaction.
 * A given key must name a submitted or already approved item; already approved ones are left as they
 * are, so the call can be repeated. Answers the keys approved now and the intake's status after.
 */
export async function approveItems(
  services: AppServices,
  world: World,
  id: string,
  itemKeys: readonly string[] | undefined,
) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  return withLockedIntake(db, found, async (trx, locked) => {
    assertOwnerMayChange(locked);
    const items = await itemsOf(trx, locked.id);
    const chosen = itemKeys ? itemKeys.map((key) => chosenItem(items, locked.id, key)) : items;
    const approved: string[] = [];
    for (const item of chosen) {
      if (item.status !== 'submitted') continue;
      // Each approval moves the intake's counter and status: read it fresh for the next one.
      const intake = (await findIntakeById(trx, locked.id)) ?? locked;
      await approveLocked(trx, world, intake, item, false);
      approved.push(item.key);
    }
    const after = (await findIntakeById(trx, locked.id)) ?? locked;
    return { intake_id: locked.id, approved, status: after.status };
  });
}

function chosenItem(items: readonly ItemRow[], intakeId: string, key: string): ItemRow {
  const item = items.find((i) => i.key === key);
  if (!item) throw new ApiError('not_found', `Intake ${intakeId} has no item with key ${key}.`);
  if (item.status !== 'submitted' && item.status !== 'approved') {
    throw new ApiError('conflict', `Cannot approve ${key}: it is ${item.status}, not submitted.`);
  }
  return item;
}
