import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FileStore } from '@tus/file-store';
import type { DataStore, Locker } from '@tus/utils';
import type { AppServices } from '../../services.js';
import { SegmentStore } from './tus-segment-store.js';

/**
 * Where unfinished tus uploads live, chosen like the rest of the providers:
 * - local files (the embedded default): @tus/file-store under DATA_DIR/tmp-tus, locks in memory;
 * - S3 (STORAGE_URL): segments in the bucket (SegmentStore), locks in Redis when REDIS_URL is set,
 *   so any API process can resume an upload another one began.
 * Finished uploads are handed over as a local file (in DATA_DIR/tmp-tus) for inspection.
 */
export interface TusBackend {
  datastore: DataStore;
  /** Undefined: @tus/server's in-memory locker (one process). */
  locker: Locker | undefined;
  /** The finished upload as a local file, for acceptReceivedFile. */
  finishedFile(id: string): Promise<string>;
  /** Removes the upload's bytes and bookkeeping (after it became a file, or failed its checks). */
  discard(id: string): Promise<void>;
  close(): Promise<void>;
}

export async function createTusBackend(services: AppServices, expireAfterMs: number): Promise<TusBackend> {
  const directory = join(services.config.dataDir, 'tmp-tus');
  await mkdir(directory, { recursive: true });
  if (services.storage.kind === 's3') {
    const datastore = new SegmentStore(services.storage, expireAfterMs);
    // The Redis client is loaded only when it is used.
    const locker = services.config.redisUrl
      ? new (await import('./tus-redis-locker.js')).RedisLocker(services.config.redisUrl)
      : undefined;
    return {
      datastore,
      locker,
      async finishedFile(id) {
        const path = join(directory, id);
        await datastore.assemble(id, path);
        return path;
      },
      async discard(id) {
        await rm(join(directory, id), { force: true });
        await datastore.remove(id).catch(() => undefined);
      },
      close: async () => locker?.close(),
    };
  }
  const datastore = new FileStore({ directory, expirationPeriodInMilliseconds: expireAfterMs });
  return {
    datastore,
    locker: undefined,
    finishedFile: (id) => Promise.resolve(join(directory, id)),
    async discard(id) {
      await rm(join(directory, id), { force: true });
      await datastore.configstore.delete(id).catch(() => undefined);
    },
    close: () => Promise.resolve(),
  };
}

/**
 * Retention (the sweep_abandoned_uploads job): unfinished uploads begun more than `expireAfterMs` ago,
 * bytes and bookkeeping. Local uploads only: in S3 the bucket's lifecycle rule on `tus/` does it
 * (SegmentStore cannot list the bucket), see docs/deploy.md. Returns how many were removed.
 */
export async function sweepAbandonedUploads(services: AppServices, expireAfterMs: number): Promise<number> {
  if (services.storage.kind === 's3') return 0;
  const directory = join(services.config.dataDir, 'tmp-tus');
  await mkdir(directory, { recursive: true });
  return new FileStore({ directory, expirationPeriodInMilliseconds: expireAfterMs }).deleteExpired();
}
