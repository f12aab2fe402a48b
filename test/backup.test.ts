import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { runCli } from './helpers/processes.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * `intake backup` while the service writes, then `intake restore` into an empty DATA_DIR: the restored
 * database passes SQLite's integrity check and holds every intake committed before the backup began,
 * with its files. On PostgreSQL the command points to pg_dump and stops.
 */

describe('backup and restore of the embedded deployment (SQLite)', () => {
  let server: TestServer;
  let api: Client;
  let scratch: string;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
    api = client(server.url, (await server.createAccount({ plan: 'agency' })).live_key);
    scratch = await mkdtemp(join(tmpdir(), 'intake-backup-'));
  });
  afterAll(async () => {
    await server.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  async function createIntake(name: string): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: name,
      client: { email: 'backup@example.com' },
      items: [{ key: 'logo', label: 'Logo', type: 'file' }],
      chase_schedule: 'off',
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  it('takes a consistent copy under write load that restores with every committed intake and file', async () => {
    const withFile = await createIntake('With a file');
    const image = await png(40, 20);
    const uploaded = await client(server.url).call('POST', `/portal/api/${withFile}/items/logo/files`, {
      rawBody: image,
      headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
    });
    expect(uploaded.status, uploaded.text).toBe(201);
    const committed = [withFile];
    for (let i = 0; i < 20; i++) committed.push(await createIntake(`Before ${i}`));

    // Writers keep creating intakes for the whole backup.
    let writing = true;
    let during = 0;
    const writers = Array.from({ length: 3 }, async (_, w) => {
      while (writing) {
        await createIntake(`During ${w}-${during++}`);
      }
    });
    const archive = join(scratch, 'intake-backup.tar.gz');
    let output: string;
    try {
      output = await runCli(['backup', '--out', archive, '--json'], server.env, 120_000);
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    expect(during).toBeGreaterThan(0);
    const summary = JSON.parse(output) as Record<string, unknown>;
    expect(summary).toMatchObject({ format: 1, files: 1, secret_key: true, archive });
    expect(statSync(archive).mode & 0o777).toBe(0o600);

    const restored = join(scratch, 'restored');
    const restoreEnv = { ...server.env, DATA_DIR: restored };
    expect(await runCli(['restore', '--from', archive], restoreEnv, 120_000)).toMatch(
      /integrity ok\), 1 file\./,
    );

    const db = new SQLite(join(restored, 'intake.sqlite'), { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      const ids = new Set(
        db
          .prepare<[], { id: string }>('select id from intakes')
          .all()
          .map((row) => row.id),
      );
      for (const id of committed) expect(ids.has(id), id).toBe(true);
      const file = db
        .prepare<[string], { storage_key: string }>('select storage_key from item_files where intake_id = ?')
        .get(withFile);
      expect(file).toBeDefined();
      expect(readFileSync(join(restored, 'files', file?.storage_key ?? ''))).toEqual(Buffer.from(image));
    } finally {
      db.close();
    }
    // The secret key comes along: signed links and sealed secrets keep working after a restore.
    expect(readFileSync(join(restored, 'secret.key'), 'utf8')).toBe(
      readFileSync(join(server.dataDir, 'secret.key'), 'utf8'),
    );

    // A restore never writes over data.
    await expect(runCli(['restore', '--from', archive], restoreEnv, 60_000)).rejects.toThrow(/not empty/);
  }, 240_000);
});

describe.runIf(DATABASES.includes('postgres'))('backup on PostgreSQL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('postgres');
  });
  afterAll(() => server.stop());

  it('says to use pg_dump and stops', async () => {
    const archive = join(server.dataDir, 'never.tar.gz');
    await expect(runCli(['backup', '--out', archive], server.env, 60_000)).rejects.toThrow(/pg_dump/);
    expect(existsSync(archive)).toBe(false);
  });
});
