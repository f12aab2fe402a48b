import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../../db/database.js';
import { systemClock } from '../../lib/clock.js';
import { auditInTransaction, runAudited, type PendingAudit } from './audit.scope.js';

/**
 * Whether a resource made now carries an async-local store: while an AsyncLocalStorage rides on async
 * hooks, every new resource (here a timer) is given a `kResourceStore` slot when it is made.
 */
function newResourcesCarryAStore(): boolean {
  const timer = setTimeout(() => undefined, 0);
  clearTimeout(timer);
  return Object.getOwnPropertySymbols(timer).some((symbol) => symbol.description === 'kResourceStore');
}

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('audited actions', () => {
  let dir: string;
  let db: Db;
  // Audit entries name their account without a foreign key: no account row is needed.
  const accountId = 'acct_audit_scope';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'audit-scope-'));
    db = openDatabase({ databaseUrl: undefined, dataDir: dir });
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  function pendingEntry(action: string): PendingAudit {
    return {
      entry: {
        account_id: accountId,
        livemode: 1,
        action,
        resource_type: 'intake',
        resource_id: null,
        actor_type: 'api_key',
        actor_id: 'key_1',
        request_id: `req_${action}`,
      },
      clock: systemClock,
      written: false,
    };
  }

  async function writtenActions(): Promise<string[]> {
    const rows = await db.kysely
      .selectFrom('audit_entries')
      .select('action')
      .where('account_id', '=', accountId)
      .orderBy('action')
      .execute();
    return rows.map((row) => row.action);
  }

  it('each of two overlapping actions writes its own entry, the later one after the first has ended', async () => {
    const first = gate();
    const second = gate();
    const a = pendingEntry('a.first');
    const b = pendingEntry('b.second');
    const runA = runAudited(a, async () => {
      await first.opened;
      await db.kysely.transaction().execute((trx) => auditInTransaction(trx));
    });
    const runB = runAudited(b, async () => {
      await second.opened;
      await db.kysely.transaction().execute((trx) => auditInTransaction(trx));
    });
    first.open();
    await runA;
    // The first action has ended; the second, still under way, must still find its entry.
    second.open();
    await runB;
    expect([a.written, b.written]).toEqual([true, true]);
    expect(await writtenActions()).toEqual(['a.first', 'b.second']);
  });

  it('the storage is switched off once no action is under way, also after one that failed', async () => {
    const held = gate();
    const running = runAudited(pendingEntry('c.running'), async () => {
      await held.opened;
    });
    expect(newResourcesCarryAStore()).toBe(true);
    held.open();
    await running;
    expect(newResourcesCarryAStore()).toBe(false);

    await expect(
      runAudited(pendingEntry('d.failed'), async () => {
        await Promise.resolve();
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(() =>
      runAudited(pendingEntry('e.thrown'), () => {
        throw new Error('thrown at once');
      }),
    ).toThrow('thrown at once');
    expect(newResourcesCarryAStore()).toBe(false);

    // And on again for the next action, which still writes its entry.
    const next = pendingEntry('f.next');
    await runAudited(next, () => db.kysely.transaction().execute((trx) => auditInTransaction(trx)));
    expect(next.written).toBe(true);
  });
});
