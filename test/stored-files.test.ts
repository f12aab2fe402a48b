import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { signFileUrl } from '../src/modules/files/signed-url.js';
import { MissingObjectError, newStorageKey } from '../src/modules/files/storage.js';
import {
  ORPHAN_GRACE_MS,
  scheduleOrphanSweep,
  sweepOrphanFiles,
  sweepOrphanThumbnails,
} from '../src/modules/files/stored-files.service.js';
import { runRetentionPurge } from '../src/modules/intakes/retention.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { startLocalS3, type LocalS3 } from './helpers/s3.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const SETUPS = DATABASES.flatMap((database) =>
  (['local', 's3'] as const).map((storage) => ({ database, storage })),
);

describe.each(SETUPS)('stored files on $database with $storage storage', ({ database, storage }) => {
  let server: TestServer;
  let s3: LocalS3 | undefined;
  let api: Client;
  let accountId: string;
  const portal = () => client(server.url);

  beforeAll(async () => {
    s3 = storage === 's3' ? await startLocalS3() : undefined;
    // The worker does not poll: each test runs the due jobs when it means to.
    server = await startTestServer(database, s3 ? { STORAGE_URL: s3.storageUrl } : {}, { runWorker: false });
    const account = await server.createAccount({ plan: 'agency' });
    accountId = account.account_id;
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await server.stop();
    await s3?.stop();
  });

  const services = () => server.server.services;

  async function exists(key: string): Promise<boolean> {
    try {
      (await services().storage.get(key)).destroy();
      return true;
    } catch (error) {
      if (error instanceof MissingObjectError) return false;
      throw error;
    }
  }

  async function intakeWithFile(): Promise<{ id: string; key: string }> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Files',
      client: { email: 'dana@example.com' },
      items: [{ key: 'logo', label: 'Logo', type: 'file' }],
    });
    const id = created.body.intake_id;
    const uploaded = await portal().call('POST', `/portal/api/${id}/items/logo/files`, {
      rawBody: await png(40, 20),
      headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
    });
    expect(uploaded.status, uploaded.text).toBe(201);
    const row = await services()
      .db.kysely.selectFrom('item_files')
      .select('storage_key')
      .where('intake_id', '=', id)
      .executeTakeFirstOrThrow();
    return { id, key: row.storage_key };
  }

  async function fileIdOf(storageKey: string): Promise<string> {
    const row = await services()
      .db.kysely.selectFrom('item_files')
      .select('id')
      .where('storage_key', '=', storageKey)
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async function storedKeys(): Promise<string[]> {
    const keys: string[] = [];
    for await (const object of services().storage.list()) keys.push(object.key);
    return keys;
  }

  async function pendingDeletions(): Promise<string[][]> {
    const rows = await services()
      .db.kysely.selectFrom('jobs')
      .select('payload')
      .where('kind', '=', 'delete_stored_files')
      .execute();
    return rows.map((r) => (JSON.parse(r.payload) as { storage_keys: string[] }).storage_keys);
  }

  it('deleting an intake enqueues the deletion of its files with the rows; the job deletes them', async () => {
    const { id, key } = await intakeWithFile();
    expect((await api.delete(`/v1/intakes/${id}`)).status).toBe(204);
    expect(await pendingDeletions()).toContainEqual([key]);
    expect(await exists(key)).toBe(true);
    await server.server.worker.runDue();
    expect(await exists(key)).toBe(false);
    expect(await pendingDeletions()).not.toContainEqual([key]);
  });

  it('a file the client removes is deleted by the job, not before the commit', async () => {
    const { id, key } = await intakeWithFile();
    const fileId = await fileIdOf(key);
    expect((await portal().delete(`/portal/api/${id}/items/logo/files/${fileId}`)).status).toBe(204);
    expect(await pendingDeletions()).toContainEqual([key]);
    await server.server.worker.runDue();
    expect(await exists(key)).toBe(false);
  });

  it("stores a file under an opaque key: no account, intake, item, file id or client's file name in it", async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Opaque keys',
      client: { email: 'dana@example.com' },
      items: [{ key: 'passport_scan', label: 'Passport', type: 'file' }],
    });
    const id = created.body.intake_id;
    const uploaded = await portal().call('POST', `/portal/api/${id}/items/passport_scan/files`, {
      rawBody: await png(40, 20),
      headers: { 'content-type': 'image/png', 'x-filename': 'dana-passport.png' },
    });
    expect(uploaded.status, uploaded.text).toBe(201);
    const brief = await api.call('POST', `/v1/intakes/${id}/brief_files`, {
      rawBody: Buffer.from('The brand book, chapter one.'),
      headers: { 'content-type': 'text/plain', 'x-filename': 'acme-brand-book.txt' },
    });
    expect(brief.status, brief.text).toBe(201);
    const rows = await services()
      .db.kysely.selectFrom('item_files')
      .select(['id', 'storage_key'])
      .where('intake_id', '=', id)
      .execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.storage_key).toMatch(/^objects\/[0-9a-f]{2}\/[0-9a-f]{32}$/);
      for (const revealing of [accountId, id, 'passport', 'dana', 'acme', 'brand', row.id]) {
        expect(row.storage_key).not.toContain(revealing);
      }
      expect(await exists(row.storage_key)).toBe(true);
    }
    // Nothing the storage lists (a bucket listing, the data directory) names the intake or the account.
    const listed = await storedKeys();
    expect(listed).toEqual(expect.arrayContaining(rows.map((r) => r.storage_key)));
    expect(listed.filter((key) => key.includes(id) || key.includes(accountId))).toEqual([]);
    if (storage === 'local') {
      const directories = await readdir(join(server.dataDir, 'files'));
      expect(directories.filter((name) => name === accountId || name === id)).toEqual([]);
    }
  });

  it('a file stored before opaque keys (`<account>/<intake>/<file id>`) still downloads and is still deleted', async () => {
    const { id } = await intakeWithFile();
    const fileId = newId('file');
    const legacyKey = `${accountId}/${id}/${fileId}`;
    const bytes = await png(30, 30);
    await services().storage.put(legacyKey, Readable.from([bytes]));
    await services()
      .db.kysely.insertInto('item_files')
      .values({
        id: fileId,
        intake_id: id,
        account_id: accountId,
        livemode: 1,
        item_key: 'logo',
        storage_key: legacyKey,
        name: 'old-logo.png',
        size: bytes.length,
        content_type: 'image/png',
        width: 30,
        height: 30,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        created_at: new Date().toISOString(),
      })
      .execute();
    const { url } = signFileUrl(server.url, services().config.secretKey, fileId, Date.now());
    const download = await fetch(url, { redirect: 'follow' });
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(bytes);

    expect((await api.delete(`/v1/intakes/${id}`)).status).toBe(204);
    await server.server.worker.runDue();
    expect(await exists(legacyKey)).toBe(false);
  });

  it('a preview goes with its file when retention purges it; the sweep removes previews of gone files', async () => {
    const { id, key } = await intakeWithFile();
    const fileId = await fileIdOf(key);
    const thumbnail = await fetch(`${server.url}/portal/api/${id}/items/logo/files/${fileId}/thumbnail`);
    expect(thumbnail.status).toBe(200);
    const preview = join(server.dataDir, 'thumbnails', `${fileId}.webp`);
    expect(existsSync(preview)).toBe(true);

    await runRetentionPurge(services(), { intake_id: id, reason: 'on_delivery' });
    await server.server.worker.runDue();
    expect(await exists(key)).toBe(false);
    expect(existsSync(preview)).toBe(false);

    // A preview left from before (its file's deletion job named no previews): the sweep removes it,
    // and keeps the preview of a file that still exists.
    const { id: keptId, key: keptKey } = await intakeWithFile();
    const keptFile = await fileIdOf(keptKey);
    expect(
      (await fetch(`${server.url}/portal/api/${keptId}/items/logo/files/${keptFile}/thumbnail`)).status,
    ).toBe(200);
    const leftover = join(server.dataDir, 'thumbnails', `${newId('file')}.webp`);
    await writeFile(leftover, Buffer.from('old preview'));
    const removed = await sweepOrphanThumbnails(services());
    expect(removed).toHaveLength(1);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(join(server.dataDir, 'thumbnails', `${keptFile}.webp`))).toBe(true);
  });

  it('the sweep deletes old objects no row refers to, and keeps young ones, referenced ones and tus uploads', async () => {
    const { key: referenced } = await intakeWithFile();
    const orphan = `${accountId}/in_gone/file_orphan${storage}`;
    const opaqueOrphan = newStorageKey();
    const tusPart = `tus/upload${storage}/000000000000000.part`;
    for (const key of [orphan, opaqueOrphan, tusPart]) {
      await services().storage.put(key, Readable.from([Buffer.from('bytes')]));
    }
    // Now: everything is young, as an upload in progress is.
    expect(await sweepOrphanFiles(services())).toEqual([]);
    expect(await exists(orphan)).toBe(true);

    const later = { now: () => new Date(Date.now() + ORPHAN_GRACE_MS + 60_000) };
    expect((await sweepOrphanFiles(services(), later)).sort()).toEqual([orphan, opaqueOrphan].sort());
    expect(await exists(orphan)).toBe(false);
    expect(await exists(opaqueOrphan)).toBe(false);
    expect(await exists(referenced)).toBe(true);
    expect(await exists(tusPart)).toBe(true);
  });

  it('the sweep is planned once, and each run plans the next', async () => {
    const db = services().db.kysely;
    await scheduleOrphanSweep(services());
    await scheduleOrphanSweep(services());
    const planned = await db
      .selectFrom('jobs')
      .select(['id', 'due_at'])
      .where('kind', '=', 'sweep_orphan_files')
      .execute();
    expect(planned).toHaveLength(1);
    const orphan = `${accountId}/in_gone/file_late${storage}`;
    await services().storage.put(orphan, Readable.from([Buffer.from('bytes')]));
    if (storage === 'local') {
      const old = new Date(Date.now() - ORPHAN_GRACE_MS - 60_000);
      await utimes(join(server.dataDir, 'files', orphan), old, old);
    }
    await db
      .updateTable('jobs')
      .set({ due_at: Date.now() })
      .where('kind', '=', 'sweep_orphan_files')
      .execute();
    await server.server.worker.runDue();
    const next = await db
      .selectFrom('jobs')
      .select(['id', 'due_at'])
      .where('kind', '=', 'sweep_orphan_files')
      .execute();
    expect(next).toHaveLength(1);
    expect(next[0]?.id).not.toBe(planned[0]?.id);
    expect(next[0]?.due_at).toBeGreaterThan(Date.now() + 60 * 60 * 1000);
    // Local files can be aged; an S3 object's time is the server's.
    expect(await exists(orphan)).toBe(storage !== 'local');
  });
});

describe('the orphan sweep at start', () => {
  it('an api process (no worker) removes its own previews of gone files', async () => {
    // The worker's sweep runs on the worker's disk; an api process on another host has its own.
    const dataDir = await mkdtemp(join(tmpdir(), 'intake-api-previews-'));
    await mkdir(join(dataDir, 'thumbnails'));
    const leftover = join(dataDir, 'thumbnails', `${newId('file')}.webp`);
    await writeFile(leftover, Buffer.from('a preview of a purged file'));
    const apiOnly = await startTestServer('sqlite', { DATA_DIR: dataDir }, { runWorker: false });
    try {
      await vi.waitFor(() => expect(existsSync(leftover)).toBe(false), { timeout: 10_000, interval: 100 });
    } finally {
      await apiOnly.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('a server that runs the worker plans the sweep; one that does not, does not', async () => {
    const withWorker = await startTestServer('sqlite');
    const apiOnly = await startTestServer('sqlite', {}, { runWorker: false });
    try {
      const planned = (server: TestServer) =>
        server.server.services.db.kysely
          .selectFrom('jobs')
          .select('kind')
          .where('kind', '=', 'sweep_orphan_files')
          .execute();
      expect(await planned(withWorker)).toHaveLength(1);
      expect(await planned(apiOnly)).toHaveLength(0);
    } finally {
      await withWorker.stop();
      await apiOnly.stop();
    }
  });
});
