/**
 * Stored objects go after their rows, never before: a transaction that deletes `item_files` rows
 * enqueues the deletion of their objects (the job commits with the rows or not at all), and a periodic
 * sweep deletes what no row refers to, such as the object of an upload whose record failed and whose
 * cleanup did not run.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { enqueueJob, jobIdsOf } from '../../jobs/jobs.js';
import { ask } from '../../kernel/domain-events.js';
import type { Clock } from '../../lib/clock.js';
import type { AppServices } from '../../services.js';
import { DELETE_STORED_FILES, SWEEP_ORPHAN_FILES, storedFilesSubject } from './files.jobs.js';
import { STORED_FILE_KEYS } from './storage.js';
import { removeThumbnails, thumbnailFileIds } from './thumbnails.js';

declare module '../../kernel/domain-events.js' {
  interface DomainQueryMap {
    /** Of these storage keys, those a row still refers to (the sweep deletes only the others). */
    storedFilesReferenced: { input: { storageKeys: string[] }; output: string[] };
    /** Of these file ids, those whose row still exists (the sweep removes the others' previews). */
    storedFilesExisting: { input: { fileIds: string[] }; output: string[] };
  }
}

/** An object younger than this may be an upload stored but not recorded yet: the sweep leaves it. */
export const ORPHAN_GRACE_MS = 24 * 60 * 60 * 1000;
/** How often the sweep runs. */
export const ORPHAN_SWEEP_INTERVAL_MS = 6 * 60 * 60 * 1000;
const SWEEP_SUBJECT = 'stored_files/sweep';
/** Sweeps are not an account's work; the job row still needs a tenant. */
const SYSTEM_TENANT = { accountId: 'system', livemode: true };
const LOOKUP_BATCH = 500;

/**
 * Deletes the objects of file rows removed in `trx`, once `trx` commits. The rows are gone in the same
 * commit, so no URL reaches the objects any more; a failed deletion is retried by the worker.
 */
export async function deleteStoredFilesAfterCommit(
  trx: Kysely<Database>,
  world: { accountId: string; livemode: boolean },
  intakeId: string,
  files: readonly { id: string; storage_key: string }[],
): Promise<void> {
  if (files.length === 0) return;
  await enqueueJob(trx, {
    accountId: world.accountId,
    livemode: world.livemode,
    kind: DELETE_STORED_FILES,
    subjectId: storedFilesSubject(intakeId),
    payload: { storage_keys: files.map((f) => f.storage_key), file_ids: files.map((f) => f.id) },
    // Real time, not the world's: deletion is not a test-clock matter.
    dueAt: Date.now(),
  });
}

export async function runStoredFileDeletion(
  services: AppServices,
  payload: { storage_keys: string[]; file_ids?: string[] },
): Promise<void> {
  for (const key of payload.storage_keys) await services.storage.delete(key);
  await removeThumbnails(services.config.dataDir, payload.file_ids ?? []);
}

/** Deletes every stored upload older than the grace period that no row refers to; returns their keys. */
export async function sweepOrphanFiles(
  services: AppServices,
  clock: Clock = services.clock,
  graceMs = ORPHAN_GRACE_MS,
): Promise<string[]> {
  const before = clock.now().getTime() - graceMs;
  const deleted: string[] = [];
  let batch: string[] = [];
  const flush = async () => {
    deleted.push(...(await deleteUnreferenced(services, batch)));
    batch = [];
  };
  for await (const object of services.storage.list()) {
    // Other objects (unfinished tus uploads) are not ours to sweep.
    const storedFile = STORED_FILE_KEYS.some((pattern) => pattern.test(object.key));
    if (!storedFile || object.modifiedAt.getTime() > before) continue;
    batch.push(object.key);
    if (batch.length >= LOOKUP_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  return deleted;
}

async function deleteUnreferenced(services: AppServices, keys: string[]): Promise<string[]> {
  const referenced = new Set(await ask(services.db.kysely, 'storedFilesReferenced', { storageKeys: keys }));
  const orphans = keys.filter((key) => !referenced.has(key));
  for (const key of orphans) await services.storage.delete(key);
  return orphans;
}

/**
 * A streamed upload's temp file (DATA_DIR/tmp) lives for the seconds of its request; one older than
 * this belongs to a process that was killed mid-upload, and nothing will ever remove it otherwise.
 */
export const TEMP_FILE_GRACE_MS = 60 * 60 * 1000;

/** Deletes temp files older than the grace period; returns their names. Wall-clock: file times are. */
export async function sweepStaleTempFiles(
  services: AppServices,
  graceMs = TEMP_FILE_GRACE_MS,
): Promise<string[]> {
  const directory = join(services.config.dataDir, 'tmp');
  const before = Date.now() - graceMs;
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const deleted: string[] = [];
  for (const name of names) {
    const path = join(directory, name);
    const facts = await stat(path).catch(() => undefined);
    if (!facts?.isFile() || facts.mtimeMs > before) continue;
    await rm(path, { force: true });
    deleted.push(name);
  }
  return deleted;
}

/** Removes the previews on this disk whose file row is gone; returns their file ids. */
export async function sweepOrphanThumbnails(services: AppServices): Promise<string[]> {
  const ids = await thumbnailFileIds(services.config.dataDir);
  const removed: string[] = [];
  for (let start = 0; start < ids.length; start += LOOKUP_BATCH) {
    const batch = ids.slice(start, start + LOOKUP_BATCH);
    const existing = new Set(await ask(services.db.kysely, 'storedFilesExisting', { fileIds: batch }));
    const gone = batch.filter((id) => !existing.has(id));
    await removeThumbnails(services.config.dataDir, gone);
    removed.push(...gone);
  }
  return removed;
}

/**
 * For an `api` process, whose disk the worker's sweep never sees: its own previews of gone files are
 * removed at start and every ORPHAN_SWEEP_INTERVAL_MS. Returns the stop function.
 */
export function keepPreviewsClean(services: AppServices, onError: (error: unknown) => void): () => void {
  const sweep = () => {
    sweepOrphanThumbnails(services).catch(onError);
  };
  sweep();
  const timer = setInterval(sweep, ORPHAN_SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** The sweep's job: sweeps, then plans the next run (one chain survives when several were started). */
export async function runOrphanSweep(services: AppServices, jobId: string): Promise<void> {
  await sweepOrphanFiles(services);
  await sweepOrphanThumbnails(services);
  await sweepStaleTempFiles(services);
  const db = services.db.kysely;
  const planned = await jobIdsOf(db, { subjectId: SWEEP_SUBJECT, kind: SWEEP_ORPHAN_FILES });
  if (planned.some((id) => id < jobId)) return;
  await enqueueSweep(db, services.clock.now().getTime() + ORPHAN_SWEEP_INTERVAL_MS);
}

/** At a worker's start: a sweep is planned unless one already is. */
export async function scheduleOrphanSweep(services: AppServices): Promise<void> {
  // Temp files left by a crash of this or another process are swept at every start too.
  await sweepStaleTempFiles(services);
  const db = services.db.kysely;
  const planned = await jobIdsOf(db, { subjectId: SWEEP_SUBJECT, kind: SWEEP_ORPHAN_FILES });
  if (planned.length === 0) await enqueueSweep(db, services.clock.now().getTime() + ORPHAN_SWEEP_INTERVAL_MS);
}

async function enqueueSweep(db: Kysely<Database>, dueAt: number): Promise<void> {
  await enqueueJob(db, {
    ...SYSTEM_TENANT,
    kind: SWEEP_ORPHAN_FILES,
    subjectId: SWEEP_SUBJECT,
    payload: {},
    dueAt,
  });
}
