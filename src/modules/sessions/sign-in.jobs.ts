import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * Emails a dashboard sign-in link to an address, if it belongs to a user and no link went to it within
 * the cool-down. The request only queues this job, so it answers in the same time whether the address
 * has an account or not. Subject: `sign-in/<hash of the address>`; one pending job per address (unique
 * key), so a burst of requests sends at most one email.
 */
export const SEND_SIGN_IN_LINK = defineJob(
  'send_sign_in_link',
  z.object({ email: z.string().min(3).max(254), return_to: z.string().max(500).nullable() }),
  // SMTP's own time-outs (10 s to connect, 30 s of silence) end a send first.
  { timeoutMs: 60_000 },
);
