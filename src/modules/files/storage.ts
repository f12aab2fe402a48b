import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, copyFile, link, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { writeNewFile } from '../../lib/new-file.js';

/** Where uploaded files live. Local directory by default; S3-compatible with STORAGE_URL. */
export interface Storage {
  readonly kind: 'local' | 's3';
  put(key: string, body: Readable): Promise<{ bytes: number }>;
  /** Moves a finished file (a temp upload) into storage; the source path is gone afterwards. */
  putFile?(key: string, path: string): Promise<{ bytes: number }>;
  /** The object's bytes; rejects with MissingObjectError when the key holds nothing. */
  get(key: string): Promise<Readable>;
  delete(key: string): Promise<void>;
  /** Every stored object (the orphan sweeper compares them with the rows that refer to them). */
  list(): AsyncIterable<StoredObject>;
  /** Throws when the storage cannot be written (readiness probe). */
  /** Releases connections (S3); a no-op for local files. */
  close?(): void;
  check(): Promise<void>;
  /** A direct download URL from the storage itself (S3 presigned GET), as an attachment. */
  presignedUrl?(
    key: string,
    expiresInSeconds: number,
    downloadName: string,
    contentType: string,
  ): Promise<string>;
}

export interface StoredObject {
  key: string;
  /** When the object was written: a young object may belong to an upload still being recorded. */
  modifiedAt: Date;
}

/** The key holds no object (never stored, or deleted). */
export class MissingObjectError extends Error {
  constructor(readonly key: string) {
    super(`No stored object under key ${key}`);
    this.name = 'MissingObjectError';
  }
}

/**
 * The key of a new stored file: 128 random bits under a two-character shard, so neither the object's
 * name nor its directory says whose file it is, for which intake or item, or what the client called it
 * (a storage listing, a backup or a misconfigured bucket reveals nothing). The row keeps the key.
 */
export function newStorageKey(): string {
  const name = randomBytes(16).toString('hex');
  return `objects/${name.slice(0, 2)}/${name}`;
}

/**
 * Keys of stored uploads, which the orphan sweep may delete when no row refers to them: the opaque keys
 * of newStorageKey, and the `<account>/<intake>/<file id>` keys files stored before them keep.
 */
export const STORED_FILE_KEYS: readonly RegExp[] = [
  /^objects\/[0-9a-f]{2}\/[0-9a-f]{32}$/,
  /^[^/]+\/[^/]+\/file_[^/]+$/,
];

const SAFE_KEY = /^[A-Za-z0-9_][A-Za-z0-9_/.-]*$/;

export function assertSafeKey(key: string): void {
  if (!SAFE_KEY.test(key) || key.includes('..')) throw new Error(`Unsafe storage key: ${key}`);
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

export class LocalStorage implements Storage {
  readonly kind = 'local';
  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    assertSafeKey(key);
    return join(this.root, key);
  }

  async put(key: string, body: Readable): Promise<{ bytes: number }> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    await writeNewFile(body, path);
    return { bytes: (await stat(path)).size };
  }

  /**
   * A hard link then unlink: an atomic move that, like put, never overwrites an existing key.
   * Across filesystems (or where links are not supported) it copies instead.
   */
  async putFile(key: string, source: string): Promise<{ bytes: number }> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    try {
      await link(source, path);
    } catch (error) {
      if (!['EXDEV', 'EPERM', 'ENOTSUP', 'EMLINK', 'ENOSYS'].includes(errorCode(error) ?? '')) throw error;
      try {
        await copyFile(source, path, constants.COPYFILE_EXCL);
      } catch (copyError) {
        if (errorCode(copyError) !== 'EEXIST') await rm(path, { force: true });
        throw copyError;
      }
    }
    await rm(source, { force: true });
    return { bytes: (await stat(path)).size };
  }

  async get(key: string): Promise<Readable> {
    const path = this.pathOf(key);
    try {
      const handle = await open(path, 'r');
      return handle.createReadStream();
    } catch (error) {
      if (errorCode(error) === 'ENOENT') throw new MissingObjectError(key);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async *list(): AsyncIterable<StoredObject> {
    yield* this.listUnder('');
  }

  private async *listUnder(prefix: string): AsyncIterable<StoredObject> {
    let entries;
    try {
      entries = await readdir(join(this.root, prefix), { withFileTypes: true });
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      const key = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) yield* this.listUnder(key);
      else if (entry.isFile()) {
        // Deleted between the listing and now: nothing to report.
        const facts = await stat(join(this.root, key)).catch(() => undefined);
        if (facts) yield { key, modifiedAt: facts.mtime };
      }
    }
  }

  async check(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }
}
