import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/** Approves an item 72 hours after its submission, unless it changed since. Subject: `<intake id>/<item key>`. */
export const AUTO_APPROVE = defineJob(
  'auto_approve',
  z.object({ intake_id: z.string(), item_key: z.string(), submitted_at: z.string() }),
);

/** Removes an intake's contents when its retention ends. Subject: the intake id. */
export const RETENTION_PURGE = defineJob(
  'retention_purge',
  z.object({ intake_id: z.string(), reason: z.enum(['retention_days', 'on_delivery']) }),
);

export function itemSubject(intakeId: string, key: string): string {
  return `${intakeId}/${key}`;
}
