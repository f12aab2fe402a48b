import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.js';
import { LocalStorage, type Storage } from './storage.js';
import { discardUpload, receiveUpload, storeUpload } from './upload.js';

let dir: string;
let tmpDir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'upload-test-'));
  tmpDir = join(dir, 'tmp');
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

function chunked(data: Buffer, size: number): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) chunks.push(data.subarray(i, i + size));
  return Readable.from(chunks);
}

async function readStream(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('receiveUpload', () => {
  it('writes the exact bytes to a fresh temp file and reports size and SHA-256', async () => {
    const data = randomBytes(300_000);
    const upload = await receiveUpload(chunked(data, 7_000), {
      maxBytes: 1_000_000,
      limitName: 'max_bytes',
      tmpDir,
    });
    expect(upload.bytes).toBe(300_000);
    expect(upload.sha256).toBe(sha256(data));
    expect(upload.tmpPath.startsWith(tmpDir)).toBe(true);
    expect((await readFile(upload.tmpPath)).equals(data)).toBe(true);
    expect((await stat(upload.tmpPath)).mode & 0o777).toBe(0o600);
    const second = await receiveUpload(chunked(data, 7_000), {
      maxBytes: 1_000_000,
      limitName: 'max_bytes',
      tmpDir,
    });
    expect(second.tmpPath).not.toBe(upload.tmpPath);
  });

  it('accepts exactly maxBytes, and an empty body', async () => {
    const data = randomBytes(1000);
    const exact = await receiveUpload(chunked(data, 300), { maxBytes: 1000, limitName: 'max_bytes', tmpDir });
    expect(exact.bytes).toBe(1000);
    const empty = await receiveUpload(Readable.from([]), { maxBytes: 1000, limitName: 'max_bytes', tmpDir });
    expect(empty).toMatchObject({ bytes: 0, sha256: sha256(Buffer.alloc(0)) });
  });

  it('stops one byte past maxBytes with 413 naming the limit, and deletes the partial file', async () => {
    const source = chunked(randomBytes(1001), 100);
    const error = await receiveUpload(source, {
      maxBytes: 1000,
      limitName: 'max_bytes (1000 bytes)',
      tmpDir,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      code: 'payload_too_large',
      status: 413,
      message: 'The file exceeds max_bytes (1000 bytes).',
    });
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('deletes the partial file when the limit is crossed before the file has opened', async () => {
    // One chunk past the limit fails the upload while its file is still opening. 200 such uploads, a pause
    // after each (their opens and removals race on the file-system threads), time for a late open to
    // land, and not one file may be left.
    for (let upload = 0; upload < 200; upload++) {
      const error = await receiveUpload(Readable.from([randomBytes(1001)]), {
        maxBytes: 1000,
        limitName: 'max_bytes (1000 bytes)',
        tmpDir,
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'payload_too_large' });
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('stops early on a huge body, drains a bounded amount (so a 413 can be answered), then cuts it off', async () => {
    let produced = 0;
    // 64 KiB chunks, endless: the upload must stop on its own.
    const source = new Readable({
      read() {
        produced += 65_536;
        this.push(Buffer.alloc(65_536, 1));
        if (produced > 64 * 1024 * 1024) this.push(null);
      },
    });
    await expect(
      receiveUpload(source, { maxBytes: 200_000, limitName: 'the plan limit', tmpDir }),
    ).rejects.toThrow('The file exceeds the plan limit.');
    expect(await readdir(tmpDir)).toEqual([]);
    // The rest is drained up to a cap and then cut off: never the whole 64 MiB.
    if (!source.closed) await new Promise((resolve) => source.once('close', resolve));
    expect(source.destroyed).toBe(true);
    expect(produced).toBeGreaterThan(4 * 1024 * 1024);
    expect(produced).toBeLessThan(8 * 1024 * 1024);
  });

  it('writes while receiving rather than buffering the body', async () => {
    const first = randomBytes(100_000);
    const source = new PassThrough();
    const receiving = receiveUpload(source, { maxBytes: 10_000_000, limitName: 'max_bytes', tmpDir });
    source.write(first);
    // The first chunk must reach the disk before the body has ended.
    const deadline = Date.now() + 5_000;
    let onDisk = 0;
    while (Date.now() < deadline && onDisk < first.length) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const files = await readdir(tmpDir).catch(() => []);
      onDisk = files[0] ? (await stat(join(tmpDir, files[0]))).size : 0;
    }
    expect(onDisk).toBe(first.length);
    source.end(Buffer.from('tail'));
    const upload = await receiving;
    expect(upload.bytes).toBe(first.length + 4);
  });

  it('cleans up when the client goes away mid-upload', async () => {
    const source = new PassThrough();
    const receiving = receiveUpload(source, { maxBytes: 10_000_000, limitName: 'max_bytes', tmpDir });
    source.write(randomBytes(10_000));
    setTimeout(() => source.destroy(new Error('aborted')), 20);
    await expect(receiving).rejects.toThrow('aborted');
    expect(await readdir(tmpDir)).toEqual([]);
  });
});

describe('storeUpload and discardUpload', () => {
  it('moves the temp file into local storage (same bytes, temp gone)', async () => {
    const storage = new LocalStorage(join(dir, 'files'));
    const data = randomBytes(50_000);
    const upload = await receiveUpload(chunked(data, 4096), {
      maxBytes: 100_000,
      limitName: 'max_bytes',
      tmpDir,
    });
    await storeUpload(storage, upload.tmpPath, 'acct_1/in_1/file_1');
    await expect(stat(upload.tmpPath)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await readStream(await storage.get('acct_1/in_1/file_1'))).equals(data)).toBe(true);
  });

  it('never overwrites an existing key, and still removes the temp file', async () => {
    const storage = new LocalStorage(join(dir, 'files'));
    await storage.put('k/one', Readable.from([Buffer.from('original')]));
    const tmpPath = join(dir, 'other.part');
    await writeFile(tmpPath, 'replacement');
    await expect(storeUpload(storage, tmpPath, 'k/one')).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(stat(tmpPath)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await readStream(await storage.get('k/one'))).toString()).toBe('original');
  });

  it('streams through put() for a storage without putFile', async () => {
    const stored = new Map<string, Buffer>();
    const storage: Storage = {
      kind: 's3',
      put: async (key, body) => {
        const data = await readStream(body);
        stored.set(key, data);
        return { bytes: data.length };
      },
      get: () => Promise.reject(new Error('unused')),
      delete: () => Promise.resolve(),
      list: () => ({
        [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
      }),
      check: () => Promise.resolve(),
    };
    const tmpPath = join(dir, 'x.part');
    await writeFile(tmpPath, 'hello bytes');
    await storeUpload(storage, tmpPath, 'a/b');
    expect(stored.get('a/b')?.toString()).toBe('hello bytes');
    await expect(stat(tmpPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('discardUpload removes the file and tolerates one already gone', async () => {
    const tmpPath = join(dir, 'y.part');
    await writeFile(tmpPath, 'x');
    await discardUpload(tmpPath);
    await expect(stat(tmpPath)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(discardUpload(tmpPath)).resolves.toBeUndefined();
  });
});
