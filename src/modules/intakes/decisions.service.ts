/**
 * Decisions: items with `assignee: "owner"` are the account holder's to answer, not the client's.
 * They never reach the portal, reminders or progress and never block completion.
 *
 * How a decision appears in GET /v1/intakes/:id/results:
 * - answered by a person (decideOwnerItem): status approved, the person's value, `decided_by: owner`;
 * - unanswered when the intake completes, with a proposal: the proposal is adopted (approved, its
 *   value, `decided_by: agent_proposal`; see decisions.adopt.ts), so results are complete;
 * - unanswered without a proposal: it stays pending and is not in results until a person answers;
 * - a person may answer (or re-answer) at any time before archiving, overriding an adopted proposal;
 *   each answer is a new approval, so `only_new` returns it once more.
 * GET /v1/intakes/:id shows every decision with its assignee, proposal and decided_by.
 */
import type { z } from 'zod';
import { checkDecision } from '../../domain/decisions.js';
import { intakeAcceptsOwnerChanges } from '../../domain/intake-state.js';
import { isOwnerItem } from '../../domain/items.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { historyOf, recordItemHistory } from '../history/history.service.js';
import { emit, itemStates, settleIntake } from './intakes.lifecycle.js';
import { toIntakeItem } from './intakes.mappers.js';
import { findItem, itemsOf, updateIntake, updateItem } from './intakes.repository.js';
import type { IntakeItem } from './intakes.schemas.js';
import { requireIntake } from './intakes.service.js';
import { requireItem, withLockedIntake } from './review.service.js';
import type { World } from '../../kernel/world.js';

/**
 * A person's answer to a decision (the dashboard calls this). The world's actor must be a signed-in
 * user: an API key (or an agent acting through one) may propose, never decide (403 otherwise).
 * 422 when the item is not a decision or the value does not fit it; 409 for an archived intake.
 */
export async function decideOwnerItem(
  services: AppServices,
  world: World,
  intakeId: string,
  key: string,
  value: unknown,
): Promise<z.infer<typeof IntakeItem>> {
  if (world.actor.type !== 'user' || !world.actor.id) {
    throw new ApiError(
      'forbidden',
      'Decisions are answered by a person in the dashboard, not by an API key.',
    );
  }
  const db = services.db.kysely;
  const found = await requireIntake(db, world, intakeId);
  await withLockedIntake(db, found, async (trx, intake) => {
    const allowed = intakeAcceptsOwnerChanges(intake.status);
    if (!allowed.ok) throw new ApiError('conflict', `Cannot decide: ${allowed.reason}.`);
    const item = await requireItem(trx, intake, key);
    const def = item.definition;
    if (!isOwnerItem(def)) {
      throw new ApiError(
        'unprocessable',
        `${key} is the client's to answer, not a decision (assignee owner).`,
      );
    }
    const checked = checkDecision(def, value);
    if (!checked.ok) throw new ApiError('unprocessable', `${key}: ${checked.message}`);
    const before = itemStates(await itemsOf(trx, intake.id));
    const at = world.clock.now().toISOString();
    const seq = intake.approval_counter + 1;
    await updateIntake(trx, intake.id, { approval_counter: seq, updated_at: at });
    await updateItem(trx, intake.id, key, {
      status: 'approved',
      value,
      saved_at: at,
      submitted_at: at,
      approved_at: at,
      approval_seq: seq,
      decided_by: 'owner',
    });
    await recordItemHistory(trx, world, { intakeId: intake.id, itemKey: key, action: 'approved' });
    await emit(trx, world, intake, 'item.approved', {
      item_key: key,
      item_type: def.type,
      status: 'approved',
      approved_at: at,
      auto_approved: false,
      decided_by: 'owner',
    });
    await settleIntake(trx, world, { ...intake, approval_counter: seq }, before, intake.status !== 'sent');
  });
  const item = await findItem(db, found.id, key);
  if (!item) throw new ApiError('not_found', `Intake ${found.id} has no item with key ${key}.`);
  return toIntakeItem(item, (await historyOf(db, found.id)).get(key) ?? []);
}
