import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * One attempt of a webhook delivery. Subject: the delivery id (whd_…). The same kind serves as the
 * delivery's watchdog while a process holds it: if that process dies, the job runs again once the
 * delivery's lease has expired, and another worker makes the attempt.
 */
export const WEBHOOK_ATTEMPT = defineJob(
  'webhook.attempt',
  z.object({ delivery_id: z.string(), attempt: z.number().int().min(1) }),
);
