/**
 * Brief files: documents the account holder attaches to an intake's brief (a style guide, a
 * contract) for the client to download from the portal. They are stored like the client's uploads,
 * in item_files under the reserved item key `_brief` (item keys match ^[a-z]…, so it can never be an
 * item's), and so share the signed /files URLs, storage usage, retention purge and deletion with them.
 */
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { z } from 'zod';
import { intakeAcceptsOwnerChanges } from '../../domain/intake-state.js';
import { planOf } from '../../domain/plans.js';
import { ApiError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { deleteStoredFilesAfterCommit } from '../files/stored-files.service.js';
import { inspectFile } from '../files/inspect.js';
import { newStorageKey } from '../files/storage.js';
import { discardUpload, receiveUpload, storeUpload } from '../files/upload.js';
import { safeFileName } from '../../lib/file-names.js';
import { addUsage, usageValue } from '../usage/usage.service.js';
import type { BriefFile } from './brief-files.schemas.js';
import { BRIEF_FILES_KEY, briefFileLinks } from './brief-files.links.js';
import { deleteFiles, filesOf, insertFile, type FileRow } from './intakes.repository.js';
import { requireIntake } from './intakes.service.js';
import { withLockedIntake } from './review.service.js';
import type { World } from '../../kernel/world.js';

export const MAX_BRIEF_FILES = 10;

type BriefFileRecord = z.infer<typeof BriefFile>;

export async function listBriefFiles(services: AppServices, world: World, id: string) {
  const intake = await requireIntake(services.db.kysely, world, id);
  return { files: await briefFileLinks(services, services.db.kysely, intake.id) };
}

export interface IncomingBriefFile {
  stream: Readable;
  filename: string;
  declaredBytes: number | undefined;
}

/** POST /v1/intakes/:id/brief_files: streams to a temp file (413 past the plan's file limit), stores, records. */
export async function attachBriefFile(
  services: AppServices,
  world: World,
  planId: string,
  id: string,
  incoming: IncomingBriefFile,
): Promise<BriefFileRecord> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  const plan = planOf(planId);
  const limitName = `the ${plan.name} plan's per-file limit (${plan.max_file_bytes} bytes)`;
  if (incoming.declaredBytes !== undefined && incoming.declaredBytes > plan.max_file_bytes) {
    incoming.stream.resume();
    throw new ApiError('payload_too_large', `The file exceeds ${limitName}.`);
  }
  const received = await receiveUpload(incoming.stream, {
    maxBytes: plan.max_file_bytes,
    limitName,
    tmpDir: join(services.config.dataDir, 'tmp'),
  });
  try {
    const name = safeFileName(incoming.filename);
    const facts = await inspectFile(received.tmpPath, name, services.config.images);
    const fileId = newId('file');
    const storageKey = newStorageKey();
    await storeUpload(services.storage, received.tmpPath, storageKey);
    try {
      await withLockedIntake(db, found, async (trx, intake) => {
        const allowed = intakeAcceptsOwnerChanges(intake.status);
        if (!allowed.ok) throw new ApiError('conflict', `Cannot attach a file: ${allowed.reason}.`);
        if ((await filesOf(trx, intake.id, BRIEF_FILES_KEY)).length >= MAX_BRIEF_FILES) {
          throw new ApiError('unprocessable', `An intake's brief holds at most ${MAX_BRIEF_FILES} files.`);
        }
        const now = world.clock.now();
        if (world.livemode) {
          const used = await usageValue(trx, world, 'storage_bytes', now);
          if (used + facts.bytes > plan.quotas.storage_bytes) {
            throw new ApiError(
              'quota_exceeded',
              `The account's file storage quota (${plan.quotas.storage_bytes} bytes on the ${plan.name} plan) is full.`,
            );
          }
        }
        const row: FileRow = {
          id: fileId,
          intake_id: intake.id,
          account_id: intake.account_id,
          livemode: intake.livemode,
          item_key: BRIEF_FILES_KEY,
          storage_key: storageKey,
          name,
          size: facts.bytes,
          content_type: facts.contentType,
          width: facts.width ?? null,
          height: facts.height ?? null,
          sha256: received.sha256,
          created_at: now.toISOString(),
        };
        await insertFile(trx, row);
        await addUsage(trx, world, 'storage_bytes', facts.bytes, now);
      });
    } catch (error) {
      await services.storage.delete(storageKey);
      throw error;
    }
    const links = await briefFileLinks(services, db, found.id);
    const record = links.find((f) => f.file_id === fileId);
    if (!record) throw new ApiError('not_found', `No brief file ${fileId}.`);
    return record;
  } finally {
    await discardUpload(received.tmpPath);
  }
}

/** DELETE /v1/intakes/:id/brief_files/:file_id. */
export async function removeBriefFile(services: AppServices, world: World, id: string, fileId: string) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  await withLockedIntake(db, found, async (trx, intake) => {
    const file = (await filesOf(trx, intake.id, BRIEF_FILES_KEY)).find((f) => f.id === fileId);
    if (!file) throw new ApiError('not_found', `Intake ${intake.id} has no brief file ${fileId}.`);
    await deleteFiles(trx, intake.id, [file.id]);
    await addUsage(trx, world, 'storage_bytes', -Number(file.size), world.clock.now());
    await deleteStoredFilesAfterCommit(trx, world, intake.id, [file]);
  });
}
