import { AUTO_APPROVE, RETENTION_PURGE } from '../modules/intakes/intakes.jobs.js';
import { runRetentionPurge } from '../modules/intakes/retention.service.js';
import { runAutoApproval } from '../modules/intakes/review.service.js';
import type { AppServices } from '../services.js';
import { definedKinds } from './jobs.js';
import type { Worker } from './worker.js';

/**
 * Registers the handler of every production job kind on a worker, then checks that defined kinds
 * and handlers match one to one (a kind without a handler, or with two, stops the start-up).
 */
export function registerJobHandlers(worker: Worker, services: AppServices): void {
  worker.register(AUTO_APPROVE, (job) => runAutoApproval(services, job.payload));
  worker.register(RETENTION_PURGE, (job) => runRetentionPurge(services, job.payload));
  worker.assertHandlers(definedKinds());
}
