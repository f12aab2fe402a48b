import { AsyncLocalStorage } from 'node:async_hooks';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Clock } from '../../lib/clock.js';
import { insertAuditEntry, type NewAuditEntry } from './audit.repository.js';

/** The audit entry of the action under way (an audited API call or dashboard form), not yet written. */
export interface PendingAudit {
  entry: Omit<NewAuditEntry, 'created_at'>;
  clock: Clock;
  written: boolean;
}

const pending = new AsyncLocalStorage<PendingAudit>();

/** Runs an audited action: the service that makes its change writes the entry in that transaction. */
export function runAudited<T>(audit: PendingAudit, action: () => T): T {
  return pending.run(audit, action);
}

/**
 * Writes the entry of the action under way, if any, inside the transaction that makes the change: the
 * entry commits with the change or not at all, so a failed insert can never follow a committed change.
 * `resourceId` names a resource this transaction created. Outside an audited action (jobs, the portal)
 * it does nothing.
 */
export async function auditInTransaction(trx: Kysely<Database>, resourceId?: string): Promise<void> {
  const audit = pending.getStore();
  if (!audit || audit.written) return;
  await insertAuditEntry(trx, {
    ...audit.entry,
    resource_id: resourceId ?? audit.entry.resource_id,
    created_at: audit.clock.now().toISOString(),
  });
  // A rollback after this fails the action itself, and a failed action is not audited.
  audit.written = true;
}
