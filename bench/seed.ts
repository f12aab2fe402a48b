import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { ItemDefinition } from '../src/domain/items.js';
import { newId } from '../src/lib/ids.js';
import { DISPATCH_CHASE } from '../src/modules/chases/chases.jobs.js';
import { emitEvent } from '../src/kernel/public-events.js';
import { itemRows } from '../src/modules/intakes/intakes.repository.js';

/**
 * Records `count` synthetic `intake.sent` events of the account's live mode through the transactional
 * outbox (`emitEvent`, as a state change does), `batch` to a transaction: each becomes a webhook
 * delivery to every endpoint subscribed to the event.
 */
export async function seedSentEvents(
  db: Kysely<Database>,
  accountId: string,
  count: number,
  batch = 100,
): Promise<void> {
  for (let done = 0; done < count; done += batch) {
    await db.transaction().execute(async (trx) => {
      for (let i = done; i < Math.min(count, done + batch); i++) {
        await emitEvent(trx, {
          accountId,
          livemode: true,
          type: 'intake.sent',
          intakeId: `in_bench${String(i).padStart(18, '0')}`,
          data: {
            project_name: 'Benchmark',
            client_email: 'bench@example.com',
            sent_at: new Date().toISOString(),
          },
          occurredAt: new Date().toISOString(),
        });
      }
    });
  }
}

/**
 * Writes `count` sent live intakes straight into the tables, each with one required item and its first
 * reminder due: a scheduled chase and its dispatch job, due `jobDelayMs` from now (negative: already
 * due; a large delay holds the jobs back until the benchmark releases them).
 */
export async function seedDueReminders(
  db: Kysely<Database>,
  accountId: string,
  count: number,
  jobDelayMs: number,
): Promise<void> {
  const now = Date.now();
  const at = new Date(now - 2 * 86_400_000).toISOString();
  const due = new Date(now - 1000).toISOString();
  for (let start = 0; start < count; start += 400) {
    const ids = Array.from({ length: Math.min(400, count - start) }, () => newId('in'));
    const chaseIds = ids.map(() => newId('ch'));
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('intakes')
        .values(
          ids.map((id, i) => ({
            id,
            account_id: accountId,
            livemode: 1,
            project_name: `Bench project ${start + i}`,
            client_email: `client${start + i}@example.test`,
            client_name: 'Dana',
            client_language: 'en',
            client_phone: null,
            client_timezone: null,
            status: 'sent',
            chase_schedule: 'default',
            due_date: null,
            retention_mode: 'days',
            retention_days: 90,
            retention_anonymize: 0,
            template_id: null,
            client_brief: null,
            folder_id: null,
            created_at: at,
            updated_at: at,
            sent_at: at,
            completed_at: null,
            archived_at: null,
            client_first_viewed_at: null,
            client_last_seen_at: null,
            results_collected_at: null,
            purged_at: null,
            anonymized_at: null,
          })),
        )
        .execute();
      await trx
        .insertInto('intake_items')
        .values(
          ids.flatMap((id) =>
            itemRows(
              { accountId, livemode: true },
              id,
              [ItemDefinition.parse({ key: 'logo', label: 'Your logo', type: 'image' })],
              0,
              at,
            ),
          ),
        )
        .execute();
      await trx
        .insertInto('chases')
        .values(
          ids.map((id, i) => ({
            id: chaseIds[i] ?? '',
            account_id: accountId,
            livemode: 1,
            intake_id: id,
            channel: 'email',
            trigger: 'schedule',
            sequence_no: 1,
            attempt_no: null,
            status: 'scheduled',
            scheduled_for: due,
            sent_at: null,
            recipient: null,
            message_id: null,
            provider_message_id: null,
            error: null,
            locked_until: null,
            created_at: at,
            updated_at: at,
          })),
        )
        .execute();
      await trx
        .insertInto('jobs')
        .values(
          ids.map((id, i) => ({
            id: newId('job'),
            account_id: accountId,
            livemode: 1,
            kind: DISPATCH_CHASE.kind,
            subject_id: `${id}/chase/${chaseIds[i] ?? ''}`,
            payload: JSON.stringify({ chase_id: chaseIds[i] }),
            due_at: now + jobDelayMs,
            locked_until: null,
            last_error: null,
            created_at: at,
          })),
        )
        .execute();
    });
  }
}
