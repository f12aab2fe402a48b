import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Where uploaded files live. Local directory by default; S3-compatible with STORAGE_URL. */
export interface Storage {
  readonly kind: 'local' | 's3';
  put(key: string, body: Readable): Promise<{ bytes: number }>;
  get(key: string): Promise<Readable>;
  delete(key: string): Promise<void>;
  /** Throws when the storage cannot be written (readiness probe). */
  check(): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9_][A-Za-z0-9_/.-]*$/;

export class LocalStorage implements Storage {
  readonly kind = 'local';
  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    if (!SAFE_KEY.test(key) || key.includes('..')) throw new Error(`Unsafe storage key: ${key}`);
    return join(this.root, key);
  }

  async put(key: string, body: Readable): Promise<{ bytes: number }> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    try {
      await pipeline(body, createWriteStream(path, { flags: 'wx' }));
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
    return { bytes: (await stat(path)).size };
  }

  get(key: string): Promise<Readable> {
    return Promise.resolve(createReadStream(this.pathOf(key)));
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async check(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }
}
