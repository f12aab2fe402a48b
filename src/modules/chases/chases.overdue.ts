/**
 * intake.overdue: a job per intake, due when its due date has passed (end of that day in the
 * client's time zone, UTC when unknown). It is written in the creating transaction and re-written
 * whenever the due date or time zone changes (replanChases); it fires once per due date, and only
 * while required items are missing.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { dueDatePassesAt, isTimeZone, missingRequiredItems } from '../../domain/chases.js';
import { cancelJobs, enqueueJob } from '../../jobs/jobs.js';
import type { AppServices } from '../../services.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import { findIntakeById, itemsOf, lockIntake, type IntakeRow } from '../intakes/intakes.service.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { INTAKE_OVERDUE, overdueSubject } from './chases.jobs.js';
import { chaseItems, ensurePlan } from './chases.plan.js';
import { findPlan, updatePlan } from './chases.repository.js';

/** Statuses in which an intake can be overdue: sent to the client and not finished. */
const OPEN_STATUSES = new Set(['sent', 'in_progress']);

function zoneOf(intake: IntakeRow): string | null {
  return intake.client_timezone && isTimeZone(intake.client_timezone) ? intake.client_timezone : null;
}

/**
 * (Re)schedules the intake's overdue check for its current due date, in the caller's transaction. A
 * new intake (`isNew`) has none to replace.
 */
export async function scheduleOverdueCheck(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  options: { isNew?: boolean } = {},
): Promise<void> {
  if (!options.isNew)
    await cancelJobs(trx, { subjectId: overdueSubject(intake.id), kind: INTAKE_OVERDUE.kind });
  if (!intake.due_date) return;
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: INTAKE_OVERDUE,
    subjectId: overdueSubject(intake.id),
    payload: { intake_id: intake.id, due_date: intake.due_date },
    dueAt: realTimeOf(world, dueDatePassesAt(intake.due_date, zoneOf(intake))),
  });
}

/** The intake_overdue job: intake.overdue once, if the date still stands and something required is missing. */
export async function runOverdueCheck(
  services: AppServices,
  payload: { intake_id: string; due_date: string },
): Promise<void> {
  const db = services.db.kysely;
  const found = await findIntakeById(db, payload.intake_id);
  if (!found) return;
  const world = await worldOfIntake(db, found, { type: 'system', id: null }, services.clock);
  await db.transaction().execute(async (trx) => {
    const intake = await lockIntake(trx, found.id);
    if (!intake || intake.due_date !== payload.due_date || !OPEN_STATUSES.has(intake.status)) return;
    // A job that ran early (the time zone moved the deadline later) leaves it to the re-scheduled one.
    if (world.clock.now().getTime() < dueDatePassesAt(payload.due_date, zoneOf(intake))) return;
    const plan = await findPlan(trx, intake.id);
    if (plan?.overdue_fired_for === payload.due_date) return;
    const missing = missingRequiredItems(chaseItems(await itemsOf(trx, intake.id)));
    if (missing.length === 0) return;
    const at = world.clock.now().toISOString();
    await ensurePlan(trx, world, intake);
    await updatePlan(trx, intake.id, { overdue_fired_for: payload.due_date, updated_at: at });
    await emitIntakeEvent(trx, world, intake, 'intake.overdue', {
      project_name: intake.project_name,
      client_email: intake.client_email,
      due_date: payload.due_date,
      overdue_at: at,
      missing_items: missing.map((i) => i.key),
    });
  });
}
