import { DISPATCH_CHASE, INTAKE_OVERDUE } from './modules/chases/chases.jobs.js';
import { runOverdueCheck } from './modules/chases/chases.overdue.js';
import { CLIENT_COMMENT_EMAIL, runCommentEmail } from './modules/chases/comment-emails.js';
import { DELETE_STORED_FILES, SWEEP_ORPHAN_FILES } from './modules/files/files.jobs.js';
import { runOrphanSweep, runStoredFileDeletion } from './modules/files/stored-files.service.js';
import { recordCutOffChase, runChaseDispatch } from './modules/chases/chases.service.js';
import { AUTO_APPROVE, RETENTION_PURGE } from './modules/intakes/intakes.jobs.js';
import { OWNER_NOTICE_BATCH, OWNER_NOTICE_DIGEST } from './modules/notices/notices.jobs.js';
import { runNoticeBatch, runNoticeDigest } from './modules/notices/notices.service.js';
import { DELIVER_MESSAGE } from './modules/notify/notify.jobs.js';
import { deliverMessage, recordCutOffMessage } from './modules/notify/notify.service.js';
import { runRetentionPurge } from './modules/intakes/retention.service.js';
import { runAutoApproval } from './modules/intakes/review.service.js';
import { runWebhookAttempt } from './modules/webhooks/attempt.js';
import { WEBHOOK_ATTEMPT } from './modules/webhooks/webhooks.jobs.js';
import { SEND_SIGN_IN_LINK } from './modules/sessions/sign-in.jobs.js';
import { runSignInLinkJob } from './modules/sessions/sign-in.service.js';
import type { AppServices } from './services.js';
import { defineJob, definedKinds } from './jobs/jobs.js';
import { recurringHandler, type RecurringJob } from './jobs/recurring.js';
import { SWEEP_EXPIRED_AUTH } from './modules/oauth/oauth.jobs.js';
import { purgeExpiredOAuth } from './modules/oauth/oauth.service.js';
import { SWEEP_ABANDONED_UPLOADS, TUS_EXPIRE_AFTER_MS } from './modules/portal/portal.jobs.js';
import { sweepAbandonedUploads } from './modules/portal/tus-backend.js';
import { releaseExpiredUploadSpace } from './modules/portal/portal.service.js';
import { purgeExpiredSessions } from './modules/sessions/sessions.service.js';
import { sweepWebhookLogs } from './modules/webhooks/webhooks.service.js';
import { SWEEP_WEBHOOK_LOGS } from './modules/webhooks/webhooks.jobs.js';
import type { Worker } from './jobs/worker.js';
import { z } from 'zod';
import { foldSlots } from './db/slot-fold.js';
import { purgeExpiredIdempotencyKeys } from './http/idempotency.js';

const HOUR_MS = 60 * 60 * 1000;

/** The slots' fold of the counts and account versions (src/db/slot-fold.ts; recurring, system). */
const FOLD_SLOTS = defineJob('fold_slots', z.object({}).strict());

/** Idempotency keys past their 24 hours deleted (src/http/idempotency.ts; recurring, system). */
const SWEEP_IDEMPOTENCY_KEYS = defineJob('sweep_idempotency_keys', z.object({}).strict());

/**
 * The retention sweepers and the slots' fold: recurring system jobs, planned when a worker starts
 * (src/jobs/recurring.ts).
 */
export const RECURRING_JOBS = {
  expiredAuth: { kind: SWEEP_EXPIRED_AUTH, everyMs: HOUR_MS },
  webhookLogs: { kind: SWEEP_WEBHOOK_LOGS, everyMs: HOUR_MS },
  abandonedUploads: { kind: SWEEP_ABANDONED_UPLOADS, everyMs: HOUR_MS },
  slotFold: { kind: FOLD_SLOTS, everyMs: HOUR_MS },
  idempotencyKeys: { kind: SWEEP_IDEMPOTENCY_KEYS, everyMs: HOUR_MS },
} satisfies Record<string, RecurringJob>;

/**
 * Registers the handler of every production job kind on a worker, then checks that defined kinds
 * and handlers match one to one (a kind without a handler, or with two, stops the start-up).
 */
export function registerJobHandlers(worker: Worker, services: AppServices): void {
  worker.register(AUTO_APPROVE, (job) => runAutoApproval(services, job.payload));
  worker.register(RETENTION_PURGE, (job) => runRetentionPurge(services, job.payload));
  worker.register(WEBHOOK_ATTEMPT, (job) => runWebhookAttempt(services, job));
  worker.register(DISPATCH_CHASE, (job) => runChaseDispatch(services, job), {
    onGiveUp: (job, trx) => recordCutOffChase(services, trx, job.payload.chase_id),
  });
  worker.register(INTAKE_OVERDUE, (job) => runOverdueCheck(services, job.payload));
  worker.register(DELIVER_MESSAGE, (job) => deliverMessage(services, job), {
    onGiveUp: (job, trx) => recordCutOffMessage(trx, job.payload.message_id),
  });
  worker.register(DELETE_STORED_FILES, (job) => runStoredFileDeletion(services, job.payload));
  worker.register(SWEEP_ORPHAN_FILES, (job) => runOrphanSweep(services, job.id));
  worker.register(OWNER_NOTICE_BATCH, (job) => runNoticeBatch(services, job));
  worker.register(OWNER_NOTICE_DIGEST, (job) => runNoticeDigest(services, job));
  worker.register(SEND_SIGN_IN_LINK, (job) => runSignInLinkJob(services, job.payload));
  const db = services.db.kysely;
  const now = () => services.clock.now().getTime();
  const { expiredAuth, webhookLogs, abandonedUploads, slotFold, idempotencyKeys } = RECURRING_JOBS;
  worker.register(
    SWEEP_EXPIRED_AUTH,
    recurringHandler(db, expiredAuth, now, async () => {
      const at = services.clock.now();
      await purgeExpiredOAuth(db, at);
      await purgeExpiredSessions(db, at.toISOString());
    }),
  );
  worker.register(
    SWEEP_WEBHOOK_LOGS,
    recurringHandler(db, webhookLogs, now, () => sweepWebhookLogs(services)),
  );
  worker.register(
    SWEEP_ABANDONED_UPLOADS,
    recurringHandler(db, abandonedUploads, now, async () => {
      await sweepAbandonedUploads(services, TUS_EXPIRE_AFTER_MS);
      await releaseExpiredUploadSpace(services);
    }),
  );
  worker.register(
    FOLD_SLOTS,
    recurringHandler(db, slotFold, now, () => foldSlots(services.db)),
  );
  worker.register(
    SWEEP_IDEMPOTENCY_KEYS,
    recurringHandler(db, idempotencyKeys, now, () => purgeExpiredIdempotencyKeys(db, services.clock.now())),
  );
  worker.register(CLIENT_COMMENT_EMAIL, (job) => runCommentEmail(services, job));
  worker.assertHandlers(definedKinds());
}
