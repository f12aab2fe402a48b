import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * Deletes stored objects whose rows a committed transaction removed (enqueued in that transaction).
 * Subject: `stored_files/<intake id>`, outside the intake's own subjects, so deleting the intake's jobs
 * with its rows keeps this one.
 */
export const DELETE_STORED_FILES = defineJob(
  'delete_stored_files',
  z.object({
    storage_keys: z.array(z.string().min(1)).min(1),
    // Their previews go too; jobs enqueued before previews were named carry none (the sweep finds those).
    file_ids: z.array(z.string().min(1)).optional(),
  }),
);

/** Finds stored objects that no row refers to (a crash between commit and deletion) and deletes them. */
export const SWEEP_ORPHAN_FILES = defineJob('sweep_orphan_files', z.object({}));

export function storedFilesSubject(intakeId: string): string {
  return `stored_files/${intakeId}`;
}
