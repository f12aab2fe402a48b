/**
 * The audit log's filter of actions (distinctAuditActions): the world's own actions, each once and in
 * order, read as a walk of one index, a seek per action (migration 0048), never the log whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distinctAuditActions, insertAuditEntry } from '../src/modules/audit/audit.service.js';
import { DATABASES } from './helpers/env.js';
import { planOf } from './helpers/plans.js';
import { startTestServer, systemWorld, type TestServer } from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

describe.each(DATABASES)("the audit log's actions on %s", (database) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  const db = () => server.server.services.db.kysely;
  const world = (accountId: string, livemode: boolean) => systemWorld(server, accountId, livemode);

  async function entry(accountId: string, livemode: boolean, action: string): Promise<void> {
    await insertAuditEntry(db(), {
      account_id: accountId,
      livemode: livemode ? 1 : 0,
      action,
      resource_type: 'intake',
      resource_id: 'in_x',
      actor_type: 'api_key',
      actor_id: 'key_x',
      request_id: 'req_x',
      created_at: new Date().toISOString(),
    });
  }

  it("lists the world's actions once each, in order, by seeks of one index", async () => {
    const mine = (await server.createAccount()).account_id;
    const other = (await server.createAccount()).account_id;
    for (const action of ['intake.send', 'intake.create', 'intake.send', 'api_key.create', 'intake.create']) {
      await entry(mine, true, action);
    }
    await entry(mine, false, 'test_clock.advance');
    await entry(other, true, 'member.invite');

    const recorder = recordStatements();
    let live: string[];
    try {
      live = await distinctAuditActions(db(), world(mine, true));
    } finally {
      recorder.stop();
    }
    // Whatever the account wrote when it was made, and the entries above.
    expect(live).toEqual([...new Set(live)].sort());
    expect(live).toEqual(expect.arrayContaining(['api_key.create', 'intake.create', 'intake.send']));
    expect(live).not.toContain('test_clock.advance');
    expect(live).not.toContain('member.invite');
    expect(await distinctAuditActions(db(), world(mine, false))).toEqual(['test_clock.advance']);
    expect(await distinctAuditActions(db(), world('acct_none', true))).toEqual([]);

    const reads = recorder.statements.filter((s) => /\baudit_entries\b/.test(s.sql));
    expect(reads).toHaveLength(1);
    const [read] = reads;
    if (!read) throw new Error('no read of the audit log');
    const steps = (await planOf(db(), database, read)).join('\n');
    expect(steps, read.sql).toContain('audit_entries_account_action');
    // A seek past each action found (SQLite shows the range), not every entry walked and made distinct.
    if (database === 'sqlite') expect(steps, read.sql).toMatch(/action>\?/);
    expect(steps, read.sql).not.toMatch(/Unique|HashAggregate|GroupAggregate|Group\b|DISTINCT/);
    expect(steps, read.sql).not.toMatch(
      /^SCAN audit_entries\b|Seq Scan on audit_entries|audit_entries_account_time/m,
    );
  });
});
