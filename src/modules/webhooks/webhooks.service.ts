import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { planOf } from '../../domain/plans.js';
import { ApiError, notFound } from '../../http/errors.js';
import { cancelJobs } from '../../jobs/jobs.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { World } from '../../kernel/world.js';
import { sendTestDelivery } from './attempt.js';
import { WEBHOOK_ATTEMPT } from './webhooks.jobs.js';
import { generateWebhookSecret, secretBox } from './signing.js';
import { urlRefusal } from './ssrf.js';
import {
  WEBHOOK_EVENT_NAMES,
  examplePayload,
  isWebhookEventName,
  type WebhookEventName,
} from './webhooks.events.js';
import {
  countEnabledEndpoints,
  deleteAttemptsBefore,
  deleteEndpoint,
  deleteFinishedDeliveriesBefore,
  deliveryIdsOfEndpoint,
  enabledEndpoints,
  findEndpoint,
  insertEndpoint,
  listAttempts,
  listEndpoints,
  updateEndpoint,
  type AttemptWithStatus,
  type EndpointRow,
  type Tenant,
} from './webhooks.repository.js';
import type {
  CreateWebhookBody,
  CreatedWebhookEndpoint,
  DeliveriesQuery,
  DeliveryAttempt,
  RotatedWebhookSecret,
  UpdateWebhookBody,
  WebhookEndpoint,
} from './webhooks.schemas.js';

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

const tenantOf = (world: World): Tenant => ({ accountId: world.accountId, livemode: world.livemode });

export function toWebhookEndpoint(row: EndpointRow): z.infer<typeof WebhookEndpoint> {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    format: row.format,
    status: row.status,
    disabled_reason: row.disabled_reason === 'gone' ? 'gone' : null,
    disabled_at: row.disabled_at,
    created_at: row.created_at,
  };
}

export function toDeliveryAttempt(row: AttemptWithStatus): z.infer<typeof DeliveryAttempt> {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    event_id: row.event_id,
    event: row.event_type,
    test: row.test === 1,
    attempt: row.attempt,
    requested_at: row.requested_at,
    duration_ms: row.duration_ms,
    response_status: row.response_status,
    response_excerpt: row.response_excerpt,
    error: row.error,
    outcome: row.outcome as z.infer<typeof DeliveryAttempt>['outcome'],
    next_attempt_at: row.next_attempt_at,
    delivery_status: row.delivery_status as z.infer<typeof DeliveryAttempt>['delivery_status'],
  };
}

/** Unknown names are a 422 that names them (and lists the known ones). */
function checkEventNames(field: string, names: readonly string[]): void {
  const unknown = [...new Set(names.filter((name) => !isWebhookEventName(name)))];
  if (unknown.length === 0) return;
  throw new ApiError(
    'unprocessable',
    `${field}: unknown event name${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}. Known events: ${WEBHOOK_EVENT_NAMES.join(', ')}.`,
    { unknown_events: unknown },
  );
}

async function checkUrl(services: AppServices, url: string): Promise<void> {
  const refusal = await urlRefusal(url, {
    production: services.config.production,
    allowPrivate: services.config.webhookAllowPrivate,
  });
  if (refusal) throw new ApiError('unprocessable', `url: ${refusal}.`);
}

/**
 * The plan decides how many enabled endpoints a mode of an account may have; more needs a bigger
 * plan, hence 402 plan_required (not quota_exceeded, which is about monthly quotas).
 */
async function checkPlanAllowsAnother(db: Kysely<Database>, world: World, planId: string): Promise<void> {
  const plan = planOf(planId);
  if (!plan.features.webhooks) {
    throw new ApiError(
      'plan_required',
      `Webhooks are not available on the ${plan.name} plan; upgrade to use them.`,
    );
  }
  const used = await countEnabledEndpoints(db, tenantOf(world));
  const limit = plan.features.max_webhook_endpoints;
  if (used >= limit) {
    throw new ApiError(
      'plan_required',
      `The ${plan.name} plan allows ${limit} webhook endpoint${limit === 1 ? '' : 's'} per mode, and ${used} exist; delete one or upgrade the plan.`,
      { limit },
    );
  }
}

export async function createWebhook(
  services: AppServices,
  world: World,
  planId: string,
  body: z.output<typeof CreateWebhookBody>,
): Promise<z.infer<typeof CreatedWebhookEndpoint>> {
  checkEventNames('events', body.events);
  await checkUrl(services, body.url);
  const id = newId('wh');
  const secret = body.secret ?? generateWebhookSecret();
  const at = world.clock.now().toISOString();
  const row: EndpointRow = {
    id,
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    url: body.url,
    events: [...new Set(body.events)],
    format: body.format ?? 'raw',
    secret_ciphertext: secretBox(services.config.secretKey).seal(id, secret),
    previous_secret_ciphertext: null,
    previous_secret_expires_at: null,
    status: 'enabled',
    disabled_reason: null,
    disabled_at: null,
    created_at: at,
    updated_at: at,
  };
  const db = services.db;
  await db.kysely.transaction().execute(async (trx) => {
    if (db.dialect === 'postgres') {
      // Serializes creations per account, so two at once cannot both pass the plan's limit.
      await trx.selectFrom('accounts').select('id').where('id', '=', world.accountId).forUpdate().execute();
    }
    await checkPlanAllowsAnother(trx, world, planId);
    await insertEndpoint(trx, row);
    await auditInTransaction(trx, row.id);
  });
  return { ...toWebhookEndpoint(row), secret };
}

export async function listWebhooks(services: AppServices, world: World) {
  return { webhooks: (await listEndpoints(services.db.kysely, tenantOf(world))).map(toWebhookEndpoint) };
}

async function requireEndpoint(services: AppServices, world: World, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(services.db.kysely, tenantOf(world), id);
  if (!row) throw notFound('webhook endpoint', id);
  return row;
}

/** Removes the endpoint, its pending deliveries and its delivery log. */
export async function deleteWebhook(services: AppServices, world: World, id: string): Promise<void> {
  const row = await requireEndpoint(services, world, id);
  await services.db.kysely.transaction().execute(async (trx) => {
    await cancelJobs(trx, { subjectId: await deliveryIdsOfEndpoint(trx, row.id), kind: WEBHOOK_ATTEMPT });
    await deleteEndpoint(trx, row.id);
    await auditInTransaction(trx);
  });
}

/** PATCH /v1/webhooks/:id: url, events and format, each checked as at registration. */
export async function updateWebhook(
  services: AppServices,
  world: World,
  id: string,
  body: z.output<typeof UpdateWebhookBody>,
): Promise<z.infer<typeof WebhookEndpoint>> {
  const row = await requireEndpoint(services, world, id);
  if (body.events) checkEventNames('events', body.events);
  if (body.url) await checkUrl(services, body.url);
  const patch = {
    ...(body.url ? { url: body.url } : {}),
    ...(body.events ? { events: [...new Set(body.events)] } : {}),
    ...(body.format ? { format: body.format } : {}),
    updated_at: world.clock.now().toISOString(),
  };
  await services.db.kysely.transaction().execute(async (trx) => {
    await updateEndpoint(trx, row.id, patch);
    await auditInTransaction(trx);
  });
  return toWebhookEndpoint({ ...row, ...patch });
}

/** A new secret, shown once; the previous one keeps signing (a second v1) for 24 hours. */
export async function rotateSecret(
  services: AppServices,
  world: World,
  id: string,
  supplied: string | undefined,
): Promise<z.infer<typeof RotatedWebhookSecret>> {
  const row = await requireEndpoint(services, world, id);
  const secret = supplied ?? generateWebhookSecret();
  const now = world.clock.now();
  const expires = new Date(now.getTime() + ROTATION_OVERLAP_MS).toISOString();
  const box = secretBox(services.config.secretKey);
  const patch = {
    secret_ciphertext: box.seal(row.id, secret),
    previous_secret_ciphertext: row.secret_ciphertext,
    previous_secret_expires_at: expires,
    updated_at: now.toISOString(),
  };
  await services.db.kysely.transaction().execute(async (trx) => {
    await updateEndpoint(trx, row.id, patch);
    await auditInTransaction(trx);
  });
  return { ...toWebhookEndpoint({ ...row, ...patch }), secret, previous_secret_expires_at: expires };
}

/** Sends a fictional event of the chosen kind now, signed like a real one, and returns its log entry. */
export async function sendTestEvent(services: AppServices, world: World, id: string, event: string) {
  checkEventNames('event', [event]);
  const endpoint = await requireEndpoint(services, world, id);
  if (endpoint.status !== 'enabled') {
    throw new ApiError(
      'conflict',
      'This endpoint was deregistered after it answered HTTP 410; register the URL again to use it.',
    );
  }
  const name = event as WebhookEventName;
  const payload = examplePayload(name, { now: world.clock.now().toISOString(), livemode: world.livemode });
  const attempt = await sendTestDelivery(services, endpoint, payload, world);
  if (!attempt) throw new ApiError('service_unavailable', 'The test delivery was interrupted; try again.');
  return toDeliveryAttempt({ ...attempt, test: 1, delivery_status: deliveryStatusAfter(attempt.outcome) });
}

function deliveryStatusAfter(outcome: string): string {
  return outcome === 'succeeded' ? 'succeeded' : 'failed';
}

export async function listDeliveries(
  services: AppServices,
  world: World,
  id: string,
  query: z.output<typeof DeliveriesQuery>,
) {
  const endpoint = await requireEndpoint(services, world, id);
  const { rows, cursorFound } = await listAttempts(services.db.kysely, tenantOf(world), endpoint.id, {
    limit: query.limit,
    startingAfter: query.starting_after,
    deliveryId: query.delivery_id,
  });
  if (!cursorFound) {
    throw new ApiError(
      'invalid_request',
      `starting_after: no delivery attempt with id ${query.starting_after ?? ''}.`,
    );
  }
  return {
    deliveries: rows.slice(0, query.limit).map(toDeliveryAttempt),
    has_more: rows.length > query.limit,
  };
}

/**
 * Retention (the sweep_webhook_logs job): attempt logs older than WEBHOOK_LOG_DAYS, and deliveries that
 * ended before then (with their attempts). Pending deliveries are kept whatever their age.
 */
export async function sweepWebhookLogs(
  services: AppServices,
): Promise<{ attempts: number; deliveries: number }> {
  const db = services.db.kysely;
  const cutoff = new Date(services.clock.now().getTime() - services.config.webhookLogDays * 86_400_000);
  const deliveries = await deleteFinishedDeliveriesBefore(db, cutoff.toISOString());
  const attempts = await deleteAttemptsBefore(db, cutoff.toISOString());
  return { attempts, deliveries };
}

/** The event types each enabled endpoint of the world subscribes to, one list per endpoint. */
export async function enabledSubscriptions(db: Kysely<Database>, world: World): Promise<string[][]> {
  const endpoints = await enabledEndpoints(db, world);
  return endpoints.map((e) => e.events);
}
