import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Upload } from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { RedisLocker, type RedisLockerOptions } from '../src/modules/portal/tus-redis-locker.js';
import { startServer, type RunningServer } from '../src/server.js';
import { serviceAvailable, TEST_REDIS_URL } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startLocalS3, type LocalS3 } from './helpers/s3.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * tus across API processes: with S3 storage an unfinished upload lives in the bucket and its lock in
 * Redis, so an upload begun on one server resumes on another that shares only PostgreSQL, S3 and
 * Redis (its own DATA_DIR). tus-js-client drives both halves.
 */
const ready = (await serviceAvailable('postgres')) && (await serviceAvailable('redis'));

function send(endpoint: string, bytes: Buffer, options: { uploadUrl?: string; stopAfter?: number } = {}) {
  return new Promise<{ url: string | null; fileId: string | undefined }>((resolve, reject) => {
    const upload: Upload = new Upload(bytes, {
      endpoint,
      uploadUrl: options.uploadUrl ?? null,
      chunkSize: 512 * 1024,
      retryDelays: null,
      uploadSize: bytes.length,
      metadata: { filename: 'clip.bin', filetype: 'application/octet-stream' },
      onChunkComplete: (_chunk, accepted) => {
        if (options.stopAfter !== undefined && accepted >= options.stopAfter) {
          void upload.abort().then(() => resolve({ url: upload.url, fileId: undefined }));
        }
      },
      onSuccess: ({ lastResponse }) =>
        resolve({ url: upload.url, fileId: lastResponse.getHeader('X-File-Id') }),
      onError: reject,
    });
    upload.start();
  });
}

/** Two processes' lockers with the same options, and an upload id of their own; both closed after. */
async function twoProcesses(
  options: RedisLockerOptions,
  body: (a: RedisLocker, b: RedisLocker, id: string) => Promise<void>,
): Promise<void> {
  const a = new RedisLocker(TEST_REDIS_URL, options);
  const b = new RedisLocker(TEST_REDIS_URL, options);
  try {
    await body(a, b, randomBytes(16).toString('hex'));
  } finally {
    await a.close();
    await b.close();
  }
}

describe.runIf(ready)('tus uploads shared by API processes (PostgreSQL, S3, Redis)', () => {
  let s3: LocalS3;
  let first: TestServer;
  let second: RunningServer;
  let secondDir: string;
  let api: Client;

  beforeAll(async () => {
    s3 = await startLocalS3('intake-tus');
    const shared = { STORAGE_URL: s3.storageUrl, REDIS_URL: TEST_REDIS_URL, SECRET_KEY: 'k'.repeat(40) };
    first = await startTestServer('postgres', shared);
    secondDir = await mkdtemp(join(tmpdir(), 'intake-second-'));
    second = await startServer(
      loadConfig({ ...first.env, DATA_DIR: secondDir, PORT: '0', LOG_LEVEL: 'silent' }),
      { runWorker: false },
    );
    const account = await first.createAccount({ plan: 'agency' });
    api = client(first.url, account.live_key);
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    await s3?.stop();
    if (secondDir) await rm(secondDir, { recursive: true, force: true });
  });

  it('resumes on the second process an upload begun on the first; the file lands in S3 once', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Shared uploads',
      client: { email: 'c@example.com' },
      items: [{ key: 'video', label: 'Video', type: 'file' }],
    });
    expect(created.status).toBe(201);
    const id = created.body.intake_id;
    const bytes = randomBytes(2 * 1024 * 1024 + 5);
    const begun = await send(`${first.url}/portal/api/${id}/items/video/tus`, bytes, {
      stopAfter: 512 * 1024,
    });
    expect(begun.url).toBeTruthy();
    const path = new URL(begun.url ?? '', first.url).pathname;

    // The other process sees the same offset: the partial upload is not on the first one's disk.
    const head = await fetch(second.url + path, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('upload-offset'))).toBe(512 * 1024);

    const resumed = await send(`${second.url}/portal/api/${id}/items/video/tus`, bytes, {
      uploadUrl: second.url + path,
    });
    expect(resumed.fileId).toMatch(/^file_/);
    const rows = await first.server.services.db.kysely
      .selectFrom('item_files')
      .select(['id', 'size', 'sha256', 'storage_key'])
      .where('intake_id', '=', id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(Number(rows[0]?.size)).toBe(bytes.length);
    expect(rows[0]?.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    const stored: Buffer[] = [];
    for await (const chunk of await first.server.services.storage.get(String(rows[0]?.storage_key)))
      stored.push(chunk as Buffer);
    expect(Buffer.concat(stored).equals(bytes)).toBe(true);
    // Finished: the segments are gone, on either process.
    const after = await fetch(first.url + path, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(after.status).toBe(404);
  });

  it('locks across processes: a second request asks the holder to let go, then takes the lock', () =>
    twoProcesses({ ttlMs: 1_000, acquireTimeoutMs: 3_000 }, async (a, b, id) => {
      const held = a.newLock(id);
      let asked = 0;
      await held.lock(new AbortController().signal, async () => {
        asked++;
        await held.unlock();
      });
      await b.newLock(id).lock(new AbortController().signal, () => undefined);
      expect(asked).toBe(1);
      // And b holds it now: a third attempt that is never released times out.
      const third = a.newLock(id);
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 300);
      await expect(third.lock(stop.signal, () => undefined)).rejects.toMatchObject({ status_code: 500 });
    }));

  it('asks the holder again when its first request to let go was missed', () =>
    // A published request reaches only the processes listening at that moment: a holder whose
    // subscription was still starting, or reconnecting, never hears it. Here the holder ignores the
    // first request it hears, as if it had missed it; the lock renews itself all the while.
    twoProcesses({ ttlMs: 1_000, acquireTimeoutMs: 3_000, askAgainMs: 200 }, async (a, b, id) => {
      const held = a.newLock(id);
      let heard = 0;
      await held.lock(new AbortController().signal, async () => {
        heard++;
        if (heard >= 2) await held.unlock();
      });
      await b.newLock(id).lock(new AbortController().signal, () => undefined);
      expect(heard).toBe(2);
      expect(b.held.has(id)).toBe(true);
      expect(a.held.has(id)).toBe(false);
    }));

  it('frees the lock of a process that died holding it, after its expiry', async () => {
    const dying = new RedisLocker(TEST_REDIS_URL, { ttlMs: 600 });
    const survivor = new RedisLocker(TEST_REDIS_URL, { ttlMs: 600, acquireTimeoutMs: 5_000 });
    const id = randomBytes(16).toString('hex');
    try {
      await dying.newLock(id).lock(new AbortController().signal, () => undefined);
      // The process dies: no unlock, no renewals, nobody answers the release request.
      await dying.close();
      await survivor.newLock(id).lock(new AbortController().signal, () => undefined);
      expect(survivor.held.has(id)).toBe(true);
    } finally {
      await survivor.close();
    }
  });
});
