import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/** SPEC: success is a 2xx within 30 seconds. */
export const WEBHOOK_TIMEOUT_MS = 30_000;
/** Attempts one worker makes at once to one endpoint: a slow receiver holds these, not the kind's slots. */
export const WEBHOOK_ENDPOINT_CONCURRENCY = 4;
/**
 * Attempts one worker makes at once, to all endpoints. Attempts mostly wait on the network, and up
 * to this many hanging endpoints (each holding its WEBHOOK_ENDPOINT_CONCURRENCY for the 30-second
 * time-out) leave every other endpoint its turn.
 */
export const WEBHOOK_CONCURRENCY = 64;
/** Attempts to one endpoint a worker claims beyond the endpoint's slots (see keyPrefetch). */
export const WEBHOOK_KEY_PREFETCH = 12;

/**
 * One attempt of a webhook delivery: the signed POST, then its outcome, under the job's lease.
 * Subject: the delivery id (whd_…); one pending attempt job per delivery (unique key); the endpoint
 * is its concurrency key. A worker that dies mid-attempt leaves the job to be claimed again once its
 * lease runs out, and the attempt is made again.
 */
export const WEBHOOK_ATTEMPT = defineJob(
  'webhook.attempt',
  // endpoint_id: the delivery's. This release reads the endpoint with the delivery (one statement) and
  // ignores it; it is still written for the previous release's workers, which read it beside the delivery.
  z.object({ delivery_id: z.string(), attempt: z.number().int().min(1), endpoint_id: z.string().optional() }),
  {
    concurrency: WEBHOOK_CONCURRENCY,
    keyConcurrency: WEBHOOK_ENDPOINT_CONCURRENCY,
    // A backlog for one endpoint is claimed a dozen attempts at a time beyond its four slots: one claim
    // (a round trip on PostgreSQL) per sixteen attempts instead of one per four.
    keyPrefetch: WEBHOOK_KEY_PREFETCH,
    // The request's own deadline (WEBHOOK_TIMEOUT_MS) ends it first; this bounds the rest.
    timeoutMs: 2 * WEBHOOK_TIMEOUT_MS,
  },
);

/** Retention: attempt logs and finished deliveries older than WEBHOOK_LOG_DAYS (recurring, system). */
export const SWEEP_WEBHOOK_LOGS = defineJob('sweep_webhook_logs', z.object({}).strict());
