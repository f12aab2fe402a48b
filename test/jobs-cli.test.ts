import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GAVE_UP_LOCKED_UNTIL, MAX_ATTEMPTS } from '../src/jobs/worker.js';
import { listJobs, type JobListFilter } from '../src/jobs/admin.js';
import { enqueueJob } from '../src/jobs/jobs.js';
import { DELETE_STORED_FILES } from '../src/modules/files/files.jobs.js';
import { newId } from '../src/lib/ids.js';
import { DATABASES } from './helpers/env.js';
import { runCli } from './helpers/processes.js';
import { eventually } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * `intake jobs list | retry | purge` against jobs that really failed: a job whose payload its kind
 * refuses fails in the worker on every attempt; run once more on its last attempt, the engine gives it
 * up, as it would after 38 hours of retries.
 */

interface Listed {
  id: string;
  kind: string;
  state: string;
  attempts: number;
  due_at: string;
  last_error: string | null;
}

const DAY_MS = 86_400_000;

describe.each(DATABASES)('jobs CLI on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(() => server.stop());

  const db = () => server.server.services.db.kysely;

  /** A real job of a real kind that fails in the worker until it is given up. */
  async function failedJob(): Promise<string> {
    const id = newId('job');
    await db()
      .insertInto('jobs')
      .values({
        id,
        account_id: 'system',
        livemode: 1,
        kind: DELETE_STORED_FILES.kind,
        subject_id: `stored_files/${id}`,
        // delete_stored_files needs at least one key: the worker refuses this payload.
        payload: JSON.stringify({ storage_keys: [] }),
        // Not due: the poll loop leaves it to runNow below.
        due_at: Date.now() + DAY_MS,
        locked_until: null,
        last_error: null,
        created_at: new Date().toISOString(),
      })
      .execute();
    await giveUp(id);
    return id;
  }

  /** Runs the job's last attempt: it fails, and the engine gives it up. */
  async function giveUp(id: string): Promise<void> {
    await db()
      .updateTable('jobs')
      .set({ attempts: MAX_ATTEMPTS - 1 })
      .where('id', '=', id)
      .execute();
    expect(await server.server.worker.runNow([id])).toBe(1);
    const row = await db().selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(Number(row.locked_until)).toBe(GAVE_UP_LOCKED_UNTIL);
  }

  const cli = (...args: string[]) => runCli(['jobs', ...args], server.env, 60_000);
  /** What `jobs list --json` prints (the same function; the CLI itself is run where its output matters). */
  const list = async (filter: JobListFilter = {}) =>
    JSON.parse(JSON.stringify(await listJobs(db(), filter, Date.now()))) as Listed[];

  it('lists, retries and purges failed jobs', async () => {
    const failed = await failedJob();
    const queued = await enqueueJob(db(), {
      accountId: 'system',
      livemode: true,
      kind: DELETE_STORED_FILES,
      subjectId: 'stored_files/cli-test',
      payload: { storage_keys: ['acct_x/int_x/file_x'] },
      dueAt: Date.now() + DAY_MS,
    });

    const all = JSON.parse(await cli('list', '--json')) as Listed[];
    expect(all.find((job) => job.id === failed)).toMatchObject({
      kind: 'delete_stored_files',
      state: 'failed',
      attempts: MAX_ATTEMPTS,
      last_error: expect.stringContaining('invalid payload'),
    });
    expect(all.find((job) => job.id === queued)).toMatchObject({
      state: 'queued',
      attempts: 0,
      last_error: null,
    });
    // The shape of --json is stable: exactly these fields.
    expect(Object.keys(all[0] ?? {}).sort()).toEqual(
      [
        'account_id',
        'attempts',
        'created_at',
        'due_at',
        'id',
        'kind',
        'last_error',
        'livemode',
        'state',
        'subject_id',
      ].sort(),
    );
    expect((await list({ state: 'failed' })).map((job) => job.id)).toEqual([failed]);
    const queuedOfKind = await list({ state: 'queued', kind: 'delete_stored_files' });
    expect(queuedOfKind.map((job) => job.id)).toEqual([queued]);

    // For people: a table with a header and one line per job.
    const table = await cli('list', '--state', 'failed');
    const lines = table.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+KIND\s+STATE\s+ATTEMPTS\s+DUE \(UTC\)\s+LAST ERROR$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${failed}\\s+delete_stored_files\\s+failed\\s+${MAX_ATTEMPTS}\\s`));

    // Only a failed job can be retried.
    await expect(cli('retry', queued)).rejects.toThrow(/No failed job/);
    // An at-most-once job's attempts that ended before their send are counted from zero too, so that a
    // retried run that dies mid-send is never run again.
    await db().updateTable('jobs').set({ unsent_attempts: 3 }).where('id', '=', failed).execute();
    expect(await cli('retry', failed)).toContain(`Retried 1 job: ${failed}`);
    const retried = await db()
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', failed)
      .executeTakeFirstOrThrow();
    expect(Number(retried.unsent_attempts)).toBe(0);
    // Due at once with its attempts from zero: the worker runs it again (and it fails again, once).
    const rerun = await eventually(async () => {
      const job = (await list()).find((j) => j.id === failed);
      return job && job.attempts === 1 && job.state === 'queued' ? job : undefined;
    }, 'the retried job to run again');
    expect(rerun.last_error).toContain('invalid payload');
    expect(await list({ state: 'failed' })).toEqual([]);

    // Purge: only failed jobs whose last attempt is older than the age given.
    await giveUp(failed);
    const old = await failedJob();
    await db()
      .updateTable('jobs')
      .set({ due_at: Date.now() - 31 * DAY_MS })
      .where('id', '=', old)
      .execute();
    expect(await cli('purge', '--failed', '--older-than', '30d')).toContain('Purged 1 failed job.');
    const left = (await list()).map((job) => job.id);
    expect(left).toContain(failed);
    expect(left).toContain(queued);
    expect(left).not.toContain(old);

    // Every failed job at once.
    expect(await cli('retry', '--failed')).toContain(`Retried 1 job: ${failed}`);
    expect(await list({ state: 'failed' })).toEqual([]);
  }, 300_000);
});
