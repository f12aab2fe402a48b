import type { AppServices } from '../../services.js';
import { sha256Hex } from '../../lib/secrets.js';
import { deleteStoredFilesAfterCommit } from '../files/stored-files.service.js';
import { addUsage } from '../usage/usage.service.js';
import { raise } from '../../kernel/domain-events.js';
import { filesOf, findIntakeById, updateIntake } from './intakes.repository.js';
import { withLockedIntake } from './review.service.js';
import { worldOfIntake } from '../../kernel/world.js';

/**
 * The retention_purge job. Removes an intake's contents (stored files, values, secrets) and keeps
 * the record with purged_at, so the caller still sees what was collected and when. With
 * retention.anonymize the client's identity is replaced as well. A days purge is skipped when the
 * intake left `completed` since it was scheduled (its countdown restarts at the next completion).
 */
export async function runRetentionPurge(
  services: AppServices,
  payload: { intake_id: string; reason: 'retention_days' | 'on_delivery' },
): Promise<void> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, payload.intake_id);
  if (!intake || intake.purged_at) return;
  if (payload.reason === 'retention_days' && intake.status !== 'completed') return;
  const world = await worldOfIntake(db, intake, { type: 'system', id: null }, services.clock);
  await withLockedIntake(db, intake, async (trx, locked) => {
    const files = await filesOf(trx, locked.id);
    const now = world.clock.now();
    await trx.deleteFrom('item_files').where('intake_id', '=', locked.id).execute();
    await trx
      .updateTable('intake_items')
      .set({ value_json: null, secret_ciphertext: null })
      .where('intake_id', '=', locked.id)
      .execute();
    const bytes = files.reduce((sum, f) => sum + Number(f.size), 0);
    if (bytes > 0) await addUsage(trx, world, 'storage_bytes', -bytes, now);
    await deleteStoredFilesAfterCommit(trx, world, locked.id, files);
    const anonymize = locked.retention_anonymize === 1;
    await updateIntake(trx, locked.id, {
      purged_at: now.toISOString(),
      updated_at: now.toISOString(),
      ...(anonymize
        ? {
            client_email: `anonymized-${sha256Hex(locked.client_email).slice(0, 12)}@invalid`,
            client_name: null,
            client_phone: null,
            anonymized_at: now.toISOString(),
          }
        : {}),
    });
    await raise(trx, 'intakePurged', { world, intakeId: locked.id });
    // The emails and SMS sent to the client, and the people notified with them, go with the identity.
    if (anonymize) {
      await raise(trx, 'intakeAnonymized', {
        world,
        intakeId: locked.id,
        anonymize: (email) => `anonymized-${sha256Hex(email).slice(0, 12)}@invalid`,
      });
    }
  });
}
