import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * One intake's waiting notices, sent as one email to each person who wants every sending. Enqueued by
 * the first notice of a burst, a minute later (BATCH_DELAY_MS), once per intake (its unique key).
 */
export const OWNER_NOTICE_BATCH = defineJob('owner_notice_batch', z.object({ intake_id: z.string() }));

/**
 * One person's daily digest in one mode, due at `at` (the world's time of the digest); each run plans
 * the next while the person still chooses the digest.
 */
export const OWNER_NOTICE_DIGEST = defineJob(
  'owner_notice_digest',
  z.object({ email: z.string(), at: z.string() }),
);

export function batchKey(intakeId: string): string {
  return `owner_notice_batch:${intakeId}`;
}

export function digestSubject(accountId: string, email: string): string {
  return `${accountId}/notice_digest/${email}`;
}

export function digestKey(accountId: string, livemode: boolean, email: string): string {
  return `owner_notice_digest:${accountId}:${livemode ? 'live' : 'test'}:${email}`;
}
