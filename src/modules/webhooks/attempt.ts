import type { Logger } from 'pino';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { enqueueJob } from '../../jobs/jobs.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { realTimeOf, worldOfIntake, type World } from '../../kernel/world.js';
import { USER_AGENT, type HttpAttempt, type WebhookHttpClient } from './delivery.js';
import { signatureHeader, type SecretBox } from './signing.js';
import { renderBody, type EndpointFormat } from './webhooks.format.js';
import { WEBHOOK_ATTEMPT } from './webhooks.jobs.js';
import {
  cancelDelivery,
  deleteIdleAttemptJobs,
  deregisterUrl,
  findDelivery,
  findEndpointById,
  insertAttempt,
  settleDelivery,
  type AttemptRow,
  type DeliveryRow,
  type EndpointRow,
} from './webhooks.repository.js';
import { retryDelayMs } from './webhooks.schedule.js';

/** Writes the job of one attempt of a delivery (also used as its watchdog while a process holds it). */
export function enqueueAttempt(
  db: Kysely<Database>,
  delivery: Pick<DeliveryRow, 'id' | 'account_id' | 'livemode'>,
  attempt: number,
  dueAt: number,
): Promise<string> {
  return enqueueJob(db, {
    accountId: delivery.account_id,
    livemode: delivery.livemode === 1,
    kind: WEBHOOK_ATTEMPT,
    subjectId: delivery.id,
    payload: { delivery_id: delivery.id, attempt },
    dueAt,
  });
}

export interface AttemptRunnerOptions {
  services: AppServices;
  /** The lease owner this process writes on the deliveries it holds. */
  owner: string;
  http: WebhookHttpClient;
  box: SecretBox;
  logger: Logger;
  timeoutMs: () => number;
  /** Aborted when the process shuts down: an interrupted attempt records nothing. */
  shutdown: AbortSignal;
}

/**
 * One attempt of a held delivery: the signed POST, then its outcome in one transaction fenced by
 * the lease (log row, delivery state, next attempt's job, or deregistration after a 410).
 */
export class AttemptRunner {
  constructor(private readonly options: AttemptRunnerOptions) {}

  private get db() {
    return this.options.services.db.kysely;
  }

  private world(delivery: DeliveryRow): Promise<World> {
    return worldOfIntake(this.db, delivery, { type: 'system', id: null }, this.options.services.clock);
  }

  /** Makes one attempt of a held delivery and records it. Returns the log entry, if one was written. */
  async run(entry: { id: string; attempt: number }): Promise<AttemptRow | undefined> {
    const delivery = await findDelivery(this.db, entry.id);
    if (
      !delivery ||
      delivery.status !== 'pending' ||
      delivery.lease_owner !== this.options.owner ||
      delivery.attempts !== entry.attempt - 1
    ) {
      return undefined;
    }
    const endpoint = await findEndpointById(this.db, delivery.endpoint_id);
    const world = await this.world(delivery);
    if (!endpoint || endpoint.status !== 'enabled') {
      await this.db.transaction().execute(async (trx) => {
        await cancelDelivery(trx, delivery.id, world.clock.now().toISOString());
        await deleteIdleAttemptJobs(trx, delivery.id);
      });
      return undefined;
    }
    const requestedAt = world.clock.now().toISOString();
    const http = await this.send(endpoint, delivery, entry.attempt, world);
    if (http.interrupted) return undefined;
    return this.record(endpoint, delivery, entry.attempt, requestedAt, http);
  }

  private async send(endpoint: EndpointRow, delivery: DeliveryRow, attempt: number, world: World) {
    if (this.options.services.config.production && !endpoint.url.startsWith('https:')) {
      return {
        outcome: 'failed',
        status: null,
        excerpt: null,
        error: 'the URL must use https',
        durationMs: 0,
        interrupted: false,
      } satisfies HttpAttempt;
    }
    const body = renderBody(
      endpoint.format as EndpointFormat,
      JSON.parse(delivery.payload) as Record<string, unknown>,
    );
    // The signature's t is real Unix time whatever the mode: receivers compare it with their clock.
    const signature = signatureHeader(
      body,
      this.signingSecrets(endpoint, world),
      this.options.services.clock.now().getTime() / 1000,
    );
    return this.options.http.send({
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
      timeoutMs: this.options.timeoutMs(),
      shutdown: this.options.shutdown,
    });
  }

  /** The current secret, and during the 24 hours after a rotation the previous one too. */
  private signingSecrets(endpoint: EndpointRow, world: World): string[] {
    const secrets = [this.options.box.open(endpoint.id, endpoint.secret_ciphertext)];
    const previous = endpoint.previous_secret_ciphertext;
    const until = endpoint.previous_secret_expires_at;
    if (previous && until && Date.parse(until) > world.clock.now().getTime()) {
      secrets.push(this.options.box.open(endpoint.id, previous));
    }
    return secrets;
  }

  private async record(
    endpoint: EndpointRow,
    delivery: DeliveryRow,
    attempt: number,
    requestedAt: string,
    http: HttpAttempt,
  ): Promise<AttemptRow | undefined> {
    // Read the world again: the test clock may have moved while the request was out.
    const world = await this.world(delivery);
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
    return this.db.transaction().execute(async (trx) => {
      const settled = await settleDelivery(
        trx,
        { id: delivery.id, owner: this.options.owner, attempt },
        { status, next_attempt_at: nextAttemptAt, completed_at: status === 'pending' ? null : endedAt },
      );
      if (!settled) return undefined;
      await insertAttempt(trx, row);
      await deleteIdleAttemptJobs(trx, delivery.id);
      if (nextAttemptAt) {
        await enqueueAttempt(trx, delivery, attempt + 1, realTimeOf(world, Date.parse(nextAttemptAt)));
      }
      if (http.outcome === 'gone') {
        const tenant = { accountId: delivery.account_id, livemode: delivery.livemode === 1 };
        const disabled = await deregisterUrl(trx, tenant, endpoint.url, endedAt);
        this.options.logger.info(
          { endpoints: disabled, url: endpoint.url },
          'webhooks: HTTP 410, endpoint deregistered',
        );
      }
      return row;
    });
  }
}
