import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import {
  allRequired,
  derivedIntakeStatus,
  type IntakeStatus,
  type ItemState,
} from '../../domain/intake-state.js';
import { isOwnerItem } from '../../domain/items.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import { adoptProposals } from './decisions.adopt.js';
import { raise } from '../../kernel/domain-events.js';
import { cancelJobs, enqueueJob } from '../../jobs/jobs.js';
import {
  applicableItemKeys,
  itemsOf,
  updateIntake,
  type IntakeRow,
  type ItemRow,
} from './intakes.repository.js';
import { RETENTION_PURGE } from './intakes.jobs.js';
import { realTimeOf, type World } from '../../kernel/world.js';

const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_RETENTION_DAYS = 90;

/** The items' states for completion and progress, from all of an intake's rows in order. */
export function itemStates(rows: readonly ItemRow[]): ItemState[] {
  const applies = applicableItemKeys(rows);
  return rows.map((row) => {
    const def = row.definition;
    // A decision (owner item), or an item an earlier answer hides, never blocks completion and is
    // not the client's progress.
    return isOwnerItem(def) || !applies.has(row.key)
      ? { required: false, status: row.status, clientFacing: false }
      : { required: def.required, status: row.status };
  });
}

/** An intake's event, in the caller's transaction (the transactional outbox). */
export const emit = emitIntakeEvent;

/**
 * After any change to an intake's items (inside the change's transaction): moves the intake to the
 * status its items imply, fires intake.completed / intake.complete when their condition becomes true,
 * and starts or cancels the retention countdown that runs from completion.
 */
export async function settleIntake(
  db: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  before: readonly ItemState[],
  clientEngaged: boolean,
): Promise<IntakeStatus> {
  const afterRows = await itemsOf(db, intake.id);
  const after = itemStates(afterRows);
  const now = world.clock.now();
  const current = intake.status;
  const next = derivedIntakeStatus(current, after, clientEngaged);
  const required = after.filter((i) => i.required).length;
  // A complete intake's undecided decisions take their agent's proposal (decisions.adopt.ts).
  if (next === 'completed') await adoptProposals(db, world, intake.id, afterRows);

  // intake.completed: every required item submitted (or approved); intake.complete: every one approved.
  const milestones = [
    ['submitted', 'intake.completed'],
    ['approved', 'intake.complete'],
  ] as const;
  for (const [level, event] of milestones) {
    if (allRequired(after, level) && !allRequired(before, level)) {
      await emit(db, world, intake, event, {
        project_name: intake.project_name,
        client_email: intake.client_email,
        completed_at: now.toISOString(),
        items_count: required,
      });
    }
  }
  // Reminders follow the items: cancelled once nothing is owed, resumed when something is again.
  await raise(db, 'intakeSettled', {
    world,
    intake: { ...intake, status: next },
    items: afterRows,
    previousStatus: current,
  });
  if (next === current) return current;

  const patch: Parameters<typeof updateIntake>[2] = { status: next, updated_at: now.toISOString() };
  if (next === 'completed') {
    patch.completed_at = now.toISOString();
    if (intake.retention_mode === 'days') {
      const days = intake.retention_days ?? DEFAULT_RETENTION_DAYS;
      await enqueueJob(db, {
        accountId: world.accountId,
        livemode: world.livemode,
        kind: RETENTION_PURGE.kind,
        subjectId: intake.id,
        payload: { intake_id: intake.id, reason: 'retention_days' },
        dueAt: realTimeOf(world, now.getTime() + days * DAY_MS),
      });
    }
  } else if (current === 'completed') {
    patch.completed_at = null;
    await cancelJobs(db, { subjectId: intake.id, kind: RETENTION_PURGE.kind });
  }
  await updateIntake(db, intake.id, patch);
  return next;
}
