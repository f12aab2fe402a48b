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

/** Audited actions under way in this process. */
let underWay = 0;

/** One audited action has ended: with none left, the storage is switched off (see runAudited). */
function ended(): void {
  underWay--;
  if (underWay === 0) pending.disable();
}

/**
 * Runs an audited action: the service that makes its change writes the entry in that transaction.
 *
 * While the storage is on, every promise, timer and socket the process makes pays for carrying it (an
 * async hook on each one's creation), whether or not an audited action made it. So it is on only while
 * audited actions are under way: `run` switches it on, and the end of the last action off. What an
 * action starts carries its entry from the start; nothing made outside every action needs one.
 */
export function runAudited<T>(audit: PendingAudit, action: () => T): T {
  underWay++;
  let result: T;
  try {
    result = pending.run(audit, action);
  } catch (error) {
    ended();
    throw error;
  }
  if (result instanceof Promise) return result.finally(ended) as T;
  ended();
  return result;
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
