import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { finished, Transform, type Readable } from 'node:stream';
import { ApiError } from '../../http/errors.js';
import { writeNewFile } from '../../lib/new-file.js';
import type { Storage } from './storage.js';

export interface ReceivedUpload {
  /** A fresh file in tmpDir holding exactly the bytes received; the caller stores or discards it. */
  tmpPath: string;
  bytes: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

export interface ReceiveOptions {
  maxBytes: number;
  /** How the 413 message names the limit, e.g. `max_bytes (1000 bytes)`. */
  limitName: string;
  tmpDir: string;
}

/**
 * After a failure (the limit crossed, the disk full) the rest of the body is read and thrown away,
 * so the HTTP layer can still answer on an intact connection; a client that keeps sending past this
 * much more is cut off.
 */
const DRAIN_LIMIT_BYTES = 4 * 1024 * 1024;

function drain(source: Readable): void {
  source.on('error', () => undefined);
  if (source.destroyed) return;
  let drained = 0;
  source.on('data', (chunk: Buffer | string) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) source.destroy();
  });
  source.resume();
}

/**
 * Streams an upload to a temp file, counting and hashing on the way (memory stays flat whatever the
 * size). Past maxBytes it stops, deletes the partial file and throws 413 payload_too_large.
 */
export async function receiveUpload(source: Readable, options: ReceiveOptions): Promise<ReceivedUpload> {
  const { maxBytes, limitName, tmpDir } = options;
  await mkdir(tmpDir, { recursive: true });
  const tmpPath = join(tmpDir, `upload-${randomBytes(16).toString('hex')}.part`);
  const hash = createHash('sha256');
  let bytes = 0;

  const meter = new Transform({
    transform(chunk: Buffer | string, _encoding, callback) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      bytes += buffer.length;
      if (bytes > maxBytes) {
        callback(new ApiError('payload_too_large', `The file exceeds ${limitName}.`));
        return;
      }
      hash.update(buffer);
      callback(null, buffer);
    },
  });
  // The source is piped, not handed to pipeline(): pipeline would destroy it (and with it the
  // client's connection) on the 413; its own failures (client gone) still end the upload.
  const stopWatching = finished(source, { writable: false }, (error) => {
    if (error) meter.destroy(error);
  });
  source.pipe(meter);
  try {
    await writeNewFile(meter, tmpPath, { mode: 0o600, highWaterMark: 1024 * 1024 });
  } catch (error) {
    source.unpipe(meter);
    drain(source);
    throw error;
  } finally {
    stopWatching();
  }
  return { tmpPath, bytes, sha256: hash.digest('hex') };
}

/** Removes a temp upload; a no-op when it is already gone (stored or discarded before). */
export async function discardUpload(tmpPath: string): Promise<void> {
  await rm(tmpPath, { force: true });
}

/**
 * Moves a received upload into storage under `key` (a rename or link for local storage, a streamed
 * multipart upload for S3). The temp file is removed whether or not storing succeeds.
 */
export async function storeUpload(storage: Storage, tmpPath: string, key: string): Promise<void> {
  try {
    if (storage.putFile) await storage.putFile(key, tmpPath);
    else await storage.put(key, createReadStream(tmpPath));
  } finally {
    await rm(tmpPath, { force: true });
  }
}
