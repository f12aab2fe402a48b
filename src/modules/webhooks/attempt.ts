import type { Kysely } from 'kysely';
import { pino, type Logger } from 'pino';
import type { Database } from '../../db/schema.js';
import { cancelJobs, enqueueJob, JobLeaseLostError, type Job } from '../../jobs/jobs.js';
import { webhookAttempts, webhookDeliveries } from '../../lib/metrics.js';
import { BatchLoader } from '../../lib/batch-loader.js';
import { Batcher } from '../../lib/batcher.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { USER_AGENT, WebhookHttpClient, type HttpAttempt } from './delivery.js';
import { secretBox, signatureHeader, type SecretBox } from './signing.js';
import { renderBody } from './webhooks.format.js';
import { WEBHOOK_ATTEMPT, WEBHOOK_CONCURRENCY, WEBHOOK_TIMEOUT_MS } from './webhooks.jobs.js';
import {
  cancelDelivery,
  deregisterUrl,
  findDeliveriesToAttempt,
  findEndpointById,
  insertAttempt,
  settleAttemptsInOne,
  insertDelivery,
  settleDelivery,
  type AttemptRow,
  type AttemptSettlement,
  type DeliveryRow,
  type DeliveryToAttempt,
  type EndpointRow,
} from './webhooks.repository.js';
import { retryDelayMs } from './webhooks.schedule.js';

/**
 * Webhook attempts are plain jobs (WEBHOOK_ATTEMPT): the job posts under its own lease (renewed by
 * the worker while the request is out) and records the outcome (log row, delivery state, next
 * attempt's job, or deregistration after a 410) in one transaction with the end of the job itself,
 * so an attempt is recorded once, by the worker that holds it.
 */

/**
 * The delivery's attempt jobs that no worker is running right now (a running one ends itself, with
 * its outcome).
 */
export async function cancelIdleAttemptJobs(db: Kysely<Database>, deliveryIds: string | readonly string[]) {
  await cancelJobs(db, { subjectId: deliveryIds, kind: WEBHOOK_ATTEMPT, idleOnly: true });
}

/** A pending delivery's one attempt job: its key keeps it single, its endpoint limits how many run at once. */
export function enqueueAttempt(
  db: Kysely<Database>,
  delivery: Pick<DeliveryRow, 'id' | 'account_id' | 'livemode' | 'endpoint_id'>,
  attempt: number,
  dueAt: number,
): Promise<string> {
  return enqueueJob(db, {
    accountId: delivery.account_id,
    livemode: delivery.livemode === 1,
    kind: WEBHOOK_ATTEMPT,
    subjectId: delivery.id,
    // endpoint_id: for the previous release's workers (see WEBHOOK_ATTEMPT); this one reads it with the delivery.
    payload: { delivery_id: delivery.id, attempt, endpoint_id: delivery.endpoint_id },
    dueAt,
    uniqueKey: `${WEBHOOK_ATTEMPT.kind}:${delivery.id}`,
    concurrencyKey: delivery.endpoint_id,
  });
}

interface DeliveryContext {
  http: WebhookHttpClient;
  box: SecretBox;
  logger: Logger;
  timeoutMs: number;
  /** Aborted at shutdown: a test delivery made in a request stops with the process. */
  shutdown: AbortController;
  /** Attempts starting together read their deliveries with their endpoints in one statement. */
  deliveries: BatchLoader<DeliveryToAttempt>;
  /**
   * Final outcomes on PostgreSQL: those ready in the same turn, or while the last statement ran, are
   * recorded by one statement (settleAttemptsInOne).
   */
  settles: Batcher<AttemptSettlement, { ended: boolean; settled: boolean }>;
}

const contexts = new WeakMap<AppServices, DeliveryContext>();

/** The HTTP client and settings of these services (one per process), created on first use. */
function contextOf(services: AppServices): DeliveryContext {
  let context = contexts.get(services);
  if (!context) {
    context = {
      http: new WebhookHttpClient(() => services.config.webhookAllowPrivate),
      box: secretBox(services.config.secretKey),
      logger: pino({ level: services.config.logLevel, base: { component: 'webhooks' } }),
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      shutdown: new AbortController(),
      deliveries: new BatchLoader((ids) => findDeliveriesToAttempt(services.db.kysely, ids)),
      settles: new Batcher(
        async (settlements) =>
          (await settleAttemptsInOne(services.db.kysely, settlements)).map((value) => ({ ok: true, value })),
        WEBHOOK_CONCURRENCY,
      ),
    };
    contexts.set(services, context);
  }
  return context;
}

/** Internal knob: tests shorten the 30-second time-out. */
export function tuneWebhookDelivery(services: AppServices, tuning: { timeoutMs?: number }): void {
  const context = contextOf(services);
  if (tuning.timeoutMs !== undefined) context.timeoutMs = tuning.timeoutMs;
}

/** Graceful shutdown: call after the worker stopped, before the database closes. */
export async function closeWebhookDelivery(services: AppServices): Promise<void> {
  const context = contexts.get(services);
  if (!context) return;
  context.shutdown.abort();
  contexts.delete(services);
  await context.http.close();
}

/** Thrown when an attempt was cut short (shutdown): nothing is recorded, the worker hands the job back. */
class AttemptInterruptedError extends Error {
  constructor() {
    super('the attempt was interrupted by a shutdown');
    this.name = 'AttemptInterruptedError';
  }
}

/** The handler of WEBHOOK_ATTEMPT. */
export async function runWebhookAttempt(
  services: AppServices,
  job: Job<{ delivery_id: string; attempt: number; endpoint_id?: string | undefined }>,
): Promise<void> {
  const { delivery_id: id, attempt } = job.payload;
  const context = contextOf(services);
  // With its endpoint, and with the attempts starting in the same pass: one statement.
  const found = await context.deliveries.load(id);
  // Already attempted, finished, cancelled or deleted: nothing to do.
  if (!found) return;
  const { delivery, endpoint } = found;
  if (delivery.status !== 'pending' || delivery.attempts !== attempt - 1) return;
  const ending = { endWith: job.finish, inOne: job.finishInOne };
  const made = await makeAttempt(services, delivery, attempt, job.signal, ending, endpoint);
  if (made === 'interrupted') throw new AttemptInterruptedError();
}

/**
 * POST /v1/webhooks/:id/test: a delivery of a fictional payload, made at once in the request and
 * logged like any other; one attempt, no retries. Its job, due after the attempt could have ended,
 * makes the attempt only if this process dies first. Returns the log entry.
 */
export async function sendTestDelivery(
  services: AppServices,
  endpoint: EndpointRow,
  payload: Record<string, unknown>,
  world: World,
): Promise<AttemptRow | undefined> {
  const db = services.db.kysely;
  const at = world.clock.now().toISOString();
  const row: DeliveryRow = {
    id: newId('whd'),
    account_id: endpoint.account_id,
    livemode: endpoint.livemode,
    endpoint_id: endpoint.id,
    event_id: String(payload.id),
    event_type: String(payload.event),
    payload,
    test: 1,
    status: 'pending',
    attempts: 0,
    next_attempt_at: at,
    lease_owner: null,
    lease_until: null,
    created_at: at,
    completed_at: null,
  };
  const context = contextOf(services);
  const fallbackDueAt = services.clock.now().getTime() + 2 * WEBHOOK_TIMEOUT_MS;
  await db.transaction().execute(async (trx) => {
    await insertDelivery(trx, row);
    await enqueueAttempt(trx, row, 1, fallbackDueAt);
  });
  const made = await makeAttempt(services, row, 1, context.shutdown.signal, {
    endWith: (work) =>
      db.transaction().execute(async (trx) => {
        await cancelIdleAttemptJobs(trx, row.id);
        return work(trx);
      }),
  });
  return made === 'interrupted' || made === 'stale' ? undefined : made;
}

/**
 * Records `work` in one transaction with the end of the attempt's job: a job's finish() (shared with
 * other outcomes finishing at the same moment), or for a test delivery its own transaction.
 */
type EndWith = <T>(work: (trx: Kysely<Database>) => Promise<T>) => Promise<T>;

/**
 * How an attempt ends its job: `endWith` in every case; `inOne` (a job's finishInOne), where there is
 * a job, for an outcome PostgreSQL records in one statement with others (settleAttemptsInOne).
 */
interface Ending {
  endWith: EndWith;
  inOne?: Job<unknown>['finishInOne'];
}

/**
 * Makes one attempt of a pending delivery and records it, ending its job in the same transaction
 * (`endWith`). 'stale': the delivery was settled meanwhile (nothing recorded).
 */
async function makeAttempt(
  services: AppServices,
  delivery: DeliveryRow,
  attempt: number,
  signal: AbortSignal,
  ending: Ending,
  /** The delivery's endpoint when already read. */
  read?: EndpointRow,
): Promise<AttemptRow | 'interrupted' | 'stale' | undefined> {
  const db = services.db.kysely;
  const context = contextOf(services);
  const endpoint =
    read?.id === delivery.endpoint_id ? read : await findEndpointById(db, delivery.endpoint_id);
  const world = await worldOf(services, delivery);
  if (!endpoint || endpoint.status !== 'enabled') {
    await ending.endWith(async (trx) => {
      await cancelDelivery(trx, delivery.id, world.clock.now().toISOString());
      await cancelIdleAttemptJobs(trx, delivery.id);
    });
    return undefined;
  }
  const requestedAt = world.clock.now().toISOString();
  const http = await send(services, context, endpoint, delivery, attempt, world, signal);
  if (http.interrupted) return 'interrupted';
  return record(services, context, endpoint, delivery, attempt, requestedAt, http, ending);
}

function worldOf(services: AppServices, delivery: DeliveryRow): Promise<World> {
  return worldOfIntake(services.db.kysely, delivery, { type: 'system', id: null }, services.clock);
}

function send(
  services: AppServices,
  context: DeliveryContext,
  endpoint: EndpointRow,
  delivery: DeliveryRow,
  attempt: number,
  world: World,
  signal: AbortSignal,
): Promise<HttpAttempt> {
  if (services.config.production && !endpoint.url.startsWith('https:')) {
    return Promise.resolve({
      outcome: 'failed',
      status: null,
      excerpt: null,
      error: 'the URL must use https',
      durationMs: 0,
      interrupted: false,
    } satisfies HttpAttempt);
  }
  const body = renderBody(endpoint.format, delivery.payload);
  // The signature's t is real Unix time whatever the mode: receivers compare it with their clock.
  const signature = signatureHeader(
    body,
    signingSecrets(context.box, endpoint, world),
    services.clock.now().getTime() / 1000,
  );
  return context.http.send({
    url: endpoint.url,
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'service-signature': signature,
      'x-service-signature': signature,
      'x-service-event': delivery.event_type,
      'x-service-delivery': delivery.id,
      'x-service-attempt': String(attempt),
    },
    timeoutMs: context.timeoutMs,
    shutdown: signal,
  });
}

/** The current secret, and during the 24 hours after a rotation the previous one too. */
function signingSecrets(box: SecretBox, endpoint: EndpointRow, world: World): string[] {
  const secrets = [box.open(endpoint.id, endpoint.secret_ciphertext)];
  const previous = endpoint.previous_secret_ciphertext;
  const until = endpoint.previous_secret_expires_at;
  if (previous && until && Date.parse(until) > world.clock.now().getTime()) {
    secrets.push(box.open(endpoint.id, previous));
  }
  return secrets;
}

async function record(
  services: AppServices,
  context: DeliveryContext,
  endpoint: EndpointRow,
  delivery: DeliveryRow,
  attempt: number,
  requestedAt: string,
  http: HttpAttempt,
  ending: Ending,
): Promise<AttemptRow | 'stale'> {
  // Read the world again: the test clock may have moved while the request was out.
  const world = await worldOf(services, delivery);
  const ended = world.clock.now();
  const endedAt = ended.toISOString();
  const delay = http.outcome === 'failed' && delivery.test === 0 ? retryDelayMs(attempt) : null;
  const nextAttemptAt = delay === null ? null : new Date(ended.getTime() + delay).toISOString();
  const status = http.outcome === 'succeeded' ? 'succeeded' : nextAttemptAt ? 'pending' : 'failed';
  const row: AttemptRow = {
    id: newId('wha'),
    account_id: delivery.account_id,
    livemode: delivery.livemode,
    endpoint_id: delivery.endpoint_id,
    delivery_id: delivery.id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    attempt,
    requested_at: requestedAt,
    duration_ms: http.durationMs,
    response_status: http.status,
    response_excerpt: http.excerpt,
    error: http.error,
    outcome: http.outcome,
    next_attempt_at: nextAttemptAt,
  };
  // On PostgreSQL a final outcome (no next attempt to queue, no endpoint to deregister) is a share of
  // one statement; any other outcome, and every outcome on SQLite, a transaction.
  const settling =
    status !== 'pending' && http.outcome !== 'gone' && ending.inOne && services.db.dialect === 'postgres'
      ? ending.inOne(async (job) => {
          const done = await context.settles.run({
            job,
            delivery: { id: delivery.id, attempt },
            patch: { status, completed_at: endedAt },
            row,
          });
          return { ended: done.ended, value: done.settled ? row : ('stale' as const) };
        })
      : recordInTransaction(
          context,
          endpoint,
          delivery,
          world,
          row,
          { status, nextAttemptAt, endedAt },
          ending.endWith,
        );
  const recorded = await settling.catch(async (error: unknown) => {
    if (error instanceof JobLeaseLostError) await logTakenOver(services, context, row);
    throw error;
  });
  if (recorded !== 'stale') {
    webhookAttempts.inc({ outcome: http.outcome });
    if (status !== 'pending') webhookDeliveries.inc({ outcome: status });
  }
  return recorded;
}

/**
 * An attempt whose job became another worker's while its request was out (this one stalled past its
 * lease): the log keeps it as it happened, without a next attempt; settling the delivery is the other
 * worker's.
 */
async function logTakenOver(services: AppServices, context: DeliveryContext, row: AttemptRow): Promise<void> {
  webhookAttempts.inc({ outcome: row.outcome });
  try {
    await insertAttempt(services.db.kysely, { ...row, next_attempt_at: null });
  } catch (error) {
    context.logger.warn({ err: error }, 'webhooks: an attempt taken over could not be logged');
  }
}

/** What an attempt settles its delivery to. */
interface Settlement {
  status: 'succeeded' | 'pending' | 'failed';
  nextAttemptAt: string | null;
  endedAt: string;
}

/** The outcome in a transaction with the end of the job: any outcome, on either database. */
function recordInTransaction(
  context: DeliveryContext,
  endpoint: EndpointRow,
  delivery: DeliveryRow,
  world: World,
  row: AttemptRow,
  { status, nextAttemptAt, endedAt }: Settlement,
  endWith: EndWith,
): Promise<AttemptRow | 'stale'> {
  // The job's end comes first: a job no longer ours (taken over) throws and nothing is recorded.
  return endWith(async (trx) => {
    const settled = await settleDelivery(
      trx,
      { id: delivery.id, attempt: row.attempt },
      { status, next_attempt_at: nextAttemptAt, completed_at: status === 'pending' ? null : endedAt },
    );
    if (!settled) return 'stale' as const;
    await insertAttempt(trx, row);
    if (nextAttemptAt) {
      await enqueueAttempt(trx, delivery, row.attempt + 1, realTimeOf(world, Date.parse(nextAttemptAt)));
    }
    if (row.outcome === 'gone') {
      const tenant = { accountId: delivery.account_id, livemode: delivery.livemode === 1 };
      const disabled = await deregisterUrl(trx, tenant, endpoint.url, endedAt);
      await cancelIdleAttemptJobs(trx, disabled.deliveryIds);
      context.logger.info(
        { endpoints: disabled.endpointIds, url: endpoint.url },
        'webhooks: HTTP 410, endpoint deregistered',
      );
    }
    return row;
  });
}
