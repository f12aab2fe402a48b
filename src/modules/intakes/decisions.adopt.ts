import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { proposalToAdopt } from '../../domain/decisions.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import { recordItemHistory } from '../history/history.service.js';
import { findIntakeById, updateIntake, updateItem, type ItemRow } from './intakes.repository.js';
import type { World } from '../../kernel/world.js';

/**
 * When an intake is complete, every undecided decision with a proposal takes the proposal as its
 * answer (`decided_by: agent_proposal`), approved like any answer so results and only_new show it.
 * Idempotent: decided items and items without a proposal are left alone. Runs in the caller's
 * transaction, under the intake's lock (from settleIntake).
 */
export async function adoptProposals(
  trx: Kysely<Database>,
  world: World,
  intakeId: string,
  items: readonly ItemRow[],
): Promise<void> {
  const adoptions = items.flatMap((item) => {
    const proposal = proposalToAdopt(item.definition, item);
    return proposal ? [{ item, value: proposal.value }] : [];
  });
  if (adoptions.length === 0) return;
  // The counter is read afresh: the caller's row may predate an approval in this same transaction.
  const intake = await findIntakeById(trx, intakeId);
  if (!intake) return;
  let seq = intake.approval_counter;
  const at = world.clock.now().toISOString();
  const adopter: World = { ...world, actor: { type: 'system', id: null } };
  for (const { item, value } of adoptions) {
    seq += 1;
    await updateItem(trx, intakeId, item.key, {
      status: 'approved',
      value,
      saved_at: at,
      submitted_at: at,
      approved_at: at,
      approval_seq: seq,
      decided_by: 'agent_proposal',
    });
    // The adoption is the service's doing, whoever's change completed the intake.
    await recordItemHistory(trx, adopter, { intakeId, itemKey: item.key, action: 'approved' });
    await emitIntakeEvent(trx, world, intake, 'item.approved', {
      item_key: item.key,
      item_type: item.definition.type,
      status: 'approved',
      approved_at: at,
      auto_approved: true,
      decided_by: 'agent_proposal',
    });
  }
  await updateIntake(trx, intakeId, { approval_counter: seq });
}
