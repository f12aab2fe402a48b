import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/schema.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { deleteChaseData } from '../src/modules/chases/chases.plan.js';
import { deleteHistoryOf } from '../src/modules/history/history.repository.js';
import { deleteIntakeRows, lockIntakeForDeletion } from '../src/modules/intakes/intakes.repository.js';
import { DATABASES, type DatabaseKind } from './helpers/env.js';
import { client, type ApiResponse, type Client } from './helpers/http.js';
import { startCliProcess, type CliProcess } from './helpers/processes.js';
import { expectError } from './helpers/security.js';
import { openTestDatabase } from './helpers/server.js';

/** Tables that hold an intake's rows (besides `intakes` itself). */
const INTAKE_TABLES = [
  'intake_items',
  'item_files',
  'events',
  'chases',
  'chase_plans',
  'messages',
  'intake_recipients',
  'item_history',
] as const;

interface Operation {
  name: string;
  draft?: boolean;
  run(api: Client, id: string): Promise<ApiResponse>;
}

const OPERATIONS: Operation[] = [
  { name: 'send', draft: true, run: (api, id) => api.post(`/v1/intakes/${id}/send`) },
  { name: 'archive', run: (api, id) => api.post(`/v1/intakes/${id}/archive`) },
  {
    name: 'add items',
    run: (api, id) =>
      api.post(`/v1/intakes/${id}/items`, { items: [{ key: 'extra', label: 'Extra', type: 'text' }] }),
  },
  { name: 'chase now', run: (api, id) => api.post(`/v1/intakes/${id}/chase`, { channel: 'email' }) },
  {
    name: 'add a recipient',
    run: (api, id) => api.post(`/v1/intakes/${id}/recipients`, { email: 'new@example.com' }),
  },
  {
    name: 'remove a recipient',
    run: (api, id) => api.delete(`/v1/intakes/${id}/recipients/${encodeURIComponent('sam@example.com')}`),
  },
  {
    name: 'reinstate a recipient',
    run: (api, id) =>
      api.post(`/v1/intakes/${id}/recipients/${encodeURIComponent('sam@example.com')}/reinstate`),
  },
];

/**
 * The intake is deleted by another transaction that holds its row while the request looks it up (and
 * finds it: the deletion is not committed yet) and then waits for the intake's lock. The deletion
 * commits once the request waits, so the request's lock finds no intake.
 */
async function whileDeleting(
  database: DatabaseKind,
  db: Kysely<Database>,
  intakeId: string,
  request: () => Promise<ApiResponse>,
): Promise<ApiResponse> {
  const { answer } = await db.transaction().execute(async (trx) => {
    await lockIntakeForDeletion(trx, intakeId);
    await deleteIntakeRows(trx, intakeId);
    await deleteChaseData(trx, intakeId);
    await deleteHistoryOf(trx, intakeId);
    const answer = request();
    if (database === 'postgres') await untilBlockedBy(db, trx);
    // SQLite shows no waiters; the service process waits for the write lock (busy timeout 5 s).
    else await sleep(1500);
    return { answer };
  });
  return answer;
}

async function untilBlockedBy(db: Kysely<Database>, trx: Kysely<Database>): Promise<void> {
  const holder = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
  const pid = holder.rows[0]?.pid;
  for (let i = 0; i < 200; i++) {
    const waiting = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(db);
    if ((waiting.rows[0]?.n ?? 0) > 0) return;
    await sleep(50);
  }
  throw new Error('The request never waited for the intake lock.');
}

describe.each(DATABASES)('an intake deleted before its lock is taken, on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  let service: CliProcess;
  let api: Client;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
    const account = await createAccount(
      opened.db.kysely,
      { email: 'owner@example.com', plan: 'agency' },
      new Date().toISOString(),
    );
    service = await startCliProcess('api', { ...opened.env, LOG_LEVEL: 'warn' });
    api = client(service.url, account.live_key);
  }, 120_000);
  afterAll(async () => {
    await service.stop();
    await opened.close();
  });

  async function leftOf(id: string): Promise<Record<string, number>> {
    const db = opened.db.kysely;
    const counts: Record<string, number> = {};
    const intakes = await db.selectFrom('intakes').select('id').where('id', '=', id).execute();
    counts.intakes = intakes.length;
    for (const table of INTAKE_TABLES) {
      const rows = await db.selectFrom(table).select('intake_id').where('intake_id', '=', id).execute();
      counts[table] = rows.length;
    }
    const jobs = await db
      .selectFrom('jobs')
      .select('id')
      .where((eb) => eb.or([eb('subject_id', '=', id), eb('subject_id', 'like', `${id}/%`)]))
      .execute();
    counts.jobs = jobs.length;
    return counts;
  }

  it.each(OPERATIONS)('$name answers 404 and changes nothing', async (operation) => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Gone soon',
      client: { email: 'dana@example.com' },
      also_notify: [{ email: 'sam@example.com' }],
      items: [{ key: 'about', label: 'About you', type: 'text' }],
      ...(operation.draft ? { send: false } : {}),
    });
    expect(created.status).toBe(201);
    const id = created.body.intake_id;

    const answer = await whileDeleting(database, opened.db.kysely, id, () => operation.run(api, id));

    expectError(answer, 404, 'not_found');
    const nothing = Object.fromEntries(['intakes', ...INTAKE_TABLES, 'jobs'].map((t) => [t, 0]));
    expect(await leftOf(id)).toEqual(nothing);
  });
});
