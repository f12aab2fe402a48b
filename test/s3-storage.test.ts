import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { S3Storage } from '../src/modules/files/s3-storage.js';
import { attachmentDisposition } from '../src/modules/files/signed-url.js';
import { LocalStorage, MissingObjectError, type Storage } from '../src/modules/files/storage.js';
import { startServer } from '../src/server.js';
import { client } from './helpers/http.js';
import { startLocalS3, type LocalS3 } from './helpers/s3.js';
import { startTestServer } from './helpers/server.js';

const BUCKET = 'intake-test';
const FIVE_MIB = 5 * 1024 * 1024;

let workDir: string;
let s3rver: LocalS3;
let endpoint: string;
let s3: S3Storage;
let local: LocalStorage;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'storage-test-'));
  s3rver = await startLocalS3(BUCKET);
  endpoint = s3rver.endpoint;
  s3 = S3Storage.fromUrl(
    `s3://S3RVER:S3RVER@${BUCKET}?endpoint=${endpoint}&region=us-east-1&force_path_style=true`,
    {},
  );
  local = new LocalStorage(join(workDir, 'local'));
});

afterAll(async () => {
  s3.close();
  await s3rver.stop();
  await rm(workDir, { recursive: true, force: true });
});

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** Pseudo-random bytes in 64 KiB chunks, produced lazily: a real stream, not one buffer. */
function streamOf(data: Buffer): Readable {
  let offset = 0;
  return new Readable({
    read() {
      if (offset >= data.length) return void this.push(null);
      this.push(data.subarray(offset, offset + 65_536));
      offset += 65_536;
    },
  });
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe.each([
  ['LocalStorage', () => local],
  ['S3Storage', () => s3],
])('storage contract: %s', (_name, storageOf) => {
  let storage: Storage;
  beforeAll(() => {
    storage = storageOf();
  });

  it('stores a 5 MiB stream and gives it back byte for byte', async () => {
    const data = randomBytes(FIVE_MIB + 12_345);
    const key = `acct_1/in_1/file_${randomBytes(6).toString('hex')}`;
    expect(await storage.put(key, streamOf(data))).toEqual({ bytes: data.length });
    const back = await readAll(await storage.get(key));
    expect(back.length).toBe(data.length);
    expect(sha256(back)).toBe(sha256(data));
  });

  it('moves a finished file in with putFile (the source is gone afterwards)', async () => {
    const data = randomBytes(300_000);
    const source = join(workDir, `upload-${randomBytes(4).toString('hex')}`);
    await writeFile(source, data);
    const key = `acct_1/in_1/file_${randomBytes(6).toString('hex')}`;
    expect(typeof storage.putFile).toBe('function');
    expect(await storage.putFile?.(key, source)).toEqual({ bytes: data.length });
    await expect(stat(source)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await readAll(await storage.get(key))).equals(data)).toBe(true);
  });

  it('deletes (idempotently); a missing key is MissingObjectError', async () => {
    const key = `acct_1/in_2/file_${randomBytes(6).toString('hex')}`;
    await storage.put(key, Readable.from([Buffer.from('short-lived')]));
    await storage.delete(key);
    await expect(storage.get(key)).rejects.toBeInstanceOf(MissingObjectError);
    await expect(storage.delete(key)).resolves.toBeUndefined();
    await expect(storage.get('acct_1/never/stored')).rejects.toBeInstanceOf(MissingObjectError);
  });

  it('fails a put whose body fails, leaving nothing under the key', async () => {
    const key = `acct_1/in_3/file_${randomBytes(6).toString('hex')}`;
    let sent = 0;
    const failing = new Readable({
      read() {
        sent += 1;
        if (sent > 3) this.destroy(new Error('client went away'));
        else this.push(randomBytes(1024));
      },
    });
    await expect(storage.put(key, failing)).rejects.toThrow('client went away');
    await expect(storage.get(key)).rejects.toBeInstanceOf(MissingObjectError);
  });

  it('refuses unsafe keys', async () => {
    await expect(storage.put('../escape', Readable.from([Buffer.from('x')]))).rejects.toThrow(
      /Unsafe storage key/,
    );
    await expect(storage.get('/etc/passwd')).rejects.toThrow(/Unsafe storage key/);
  });

  it('passes its readiness check', async () => {
    await expect(storage.check()).resolves.toBeUndefined();
  });
});

describe('readiness checks fail when the storage is unusable', () => {
  it('LocalStorage under a regular file', async () => {
    const file = join(workDir, 'not-a-dir');
    await writeFile(file, 'x');
    await expect(new LocalStorage(join(file, 'files')).check()).rejects.toThrow();
  });

  it('S3Storage with a bucket that does not exist', async () => {
    const missing = S3Storage.fromUrl(`s3://S3RVER:S3RVER@no-such-bucket?endpoint=${endpoint}`, {});
    try {
      await expect(missing.check()).rejects.toThrow();
    } finally {
      missing.close();
    }
  });
});

describe('S3 uploads', () => {
  it('send a large stream as a multipart upload, part by part', async () => {
    const send = vi.spyOn(S3Client.prototype, 'send');
    try {
      const data = randomBytes(FIVE_MIB + 1);
      const key = `acct_1/in_5/file_${randomBytes(6).toString('hex')}`;
      await s3.put(key, streamOf(data));
      const commands = send.mock.calls.map(([command]) => command.constructor.name);
      expect(commands).toEqual([
        'CreateMultipartUploadCommand',
        'UploadPartCommand',
        'UploadPartCommand',
        'CompleteMultipartUploadCommand',
      ]);
      expect(sha256(await readAll(await s3.get(key)))).toBe(sha256(data));
    } finally {
      send.mockRestore();
    }
  });
});

describe('S3 presigned URLs', () => {
  it('download the object as a named attachment, until they expire', async () => {
    const data = randomBytes(200_000);
    const key = `acct_1/in_4/file_${randomBytes(6).toString('hex')}`;
    await s3.put(key, streamOf(data));
    const name = 'Logo final – été.png';
    // 3 seconds: X-Amz-Date has one-second resolution, so a 1-second URL can expire before its first use.
    const url = await s3.presignedUrl(key, 3, name, 'image/png');
    expect(url.startsWith(`${endpoint}/${BUCKET}/`)).toBe(true);
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('3');

    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toBe(attachmentDisposition(name));
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await response.arrayBuffer()).equals(data)).toBe(true);

    // After 4.2 s a 3-second URL is past its expiry for sure.
    await new Promise((resolve) => setTimeout(resolve, 4_200));
    const expired = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('expired');
  });
});

describe('STORAGE_URL selects the storage', () => {
  it('s3:// gives S3 storage, and readiness checks the bucket', async () => {
    const good = await startTestServer('sqlite', {
      STORAGE_URL: `s3://S3RVER:S3RVER@${BUCKET}?endpoint=${endpoint}&region=us-east-1`,
    });
    const bad = await startTestServer('sqlite', {
      STORAGE_URL: `s3://S3RVER:S3RVER@missing-bucket?endpoint=${endpoint}&region=us-east-1`,
    });
    try {
      expect(good.server.services.storage.kind).toBe('s3');
      const ready = await client(good.url).get<{ checks: { storage: string } }>('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.checks.storage).toBe('ok');
      const down = await client(bad.url).get<{ checks: { storage: string } }>('/readyz');
      expect(down.status).toBe(503);
      expect(down.body.checks.storage).toBe('down');
    } finally {
      for (const server of [good, bad]) {
        const storage = server.server.services.storage;
        if (storage instanceof S3Storage) storage.close();
        await server.stop();
      }
    }
  });

  it('other schemes stop the start with a clear message', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'storage-config-'));
    try {
      const config = loadConfig({
        PORT: '0',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        STORAGE_URL: 'gs://bucket',
      });
      const error = await startServer(config).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/STORAGE_URL must start with s3:\/\/.*not gs:\/\//);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
