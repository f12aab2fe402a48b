import { pino, type Logger } from 'pino';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import type { World } from '../../kernel/world.js';
import { AttemptRunner, enqueueAttempt } from './attempt.js';
import { WebhookHttpClient } from './delivery.js';
import { secretBox } from './signing.js';
import {
  claimDelivery,
  findDelivery,
  insertDelivery,
  releaseLeases,
  renewLeases,
  type DeliveryRow,
  type EndpointRow,
} from './webhooks.repository.js';

/**
 * Runs webhook attempts apart from the job worker, so that a slow or dead endpoint never holds up
 * anything else. The worker runs only a few jobs at a time (WORKER_CONCURRENCY); an attempt's job only
 * *claims* its delivery (a lease on the delivery row, plus a watchdog job due when the lease ends) and
 * hands it to this dispatcher, which runs attempts concurrently: at most `perEndpointConcurrency` at
 * once per endpoint and `globalConcurrency` per process, the rest queued per endpoint, round robin
 * across endpoints.
 *
 * Nothing is lost to a crash: while a process holds a delivery it renews the lease; when the process
 * dies the lease lapses, the watchdog job comes due, and any worker makes the attempt again. The
 * outcome of an attempt (log row, delivery state, next attempt's job or deregistration) is written in
 * one transaction, fenced by the lease, so an attempt taken over by another process is recorded once.
 */

export interface DeliveryTuning {
  /** SPEC: success is a 2xx within 30 seconds. Tests shorten it. */
  timeoutMs: number;
  /** How long a held delivery is safe from takeover; renewed every third of it while held. */
  leaseMs: number;
  perEndpointConcurrency: number;
  globalConcurrency: number;
  /** Deliveries one process holds at most (queued or in flight), overall and per endpoint. */
  maxHeld: number;
  maxHeldPerEndpoint: number;
  /**
   * A job this process cannot take now (too much held, shutting down) is due again after this long;
   * over an endpoint's cap, after the time its queue should take to drain (at most maxDeferMs).
   */
  busyRetryMs: number;
  maxDeferMs: number;
}

export const DEFAULT_TUNING: Readonly<DeliveryTuning> = {
  timeoutMs: 30_000,
  leaseMs: 90_000,
  perEndpointConcurrency: 4,
  globalConcurrency: 128,
  maxHeld: 10_000,
  maxHeldPerEndpoint: 1_000,
  busyRetryMs: 1_000,
  maxDeferMs: 60_000,
};

interface Held {
  id: string;
  endpointId: string;
  attempt: number;
}

interface Lane {
  active: number;
  queue: Held[];
  held: number;
  /** Moving average of this endpoint's attempt durations (ms), to estimate how fast its queue drains. */
  averageMs: number;
}

export class WebhookDispatcher {
  /** This process's name on the leases it takes. */
  readonly owner = newId('wd', 16);
  private tuning: DeliveryTuning = { ...DEFAULT_TUNING };
  private readonly held = new Map<string, Held>();
  private readonly lanes = new Map<string, Lane>();
  private readonly running = new Set<Promise<unknown>>();
  private readonly shutdown = new AbortController();
  private readonly http: WebhookHttpClient;
  private readonly attempts: AttemptRunner;
  private active = 0;
  private accepting = true;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly services: AppServices,
    private readonly logger: Logger,
  ) {
    this.http = new WebhookHttpClient(() => services.config.webhookAllowPrivate);
    this.attempts = new AttemptRunner({
      services,
      owner: this.owner,
      http: this.http,
      box: secretBox(services.config.secretKey),
      logger,
      timeoutMs: () => this.tuning.timeoutMs,
      shutdown: this.shutdown.signal,
    });
  }

  tune(tuning: Partial<DeliveryTuning>): void {
    this.tuning = { ...this.tuning, ...tuning };
    if (this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
      this.startHeartbeat();
    }
  }

  private get db() {
    return this.services.db.kysely;
  }

  private realNow(): number {
    return this.services.clock.now().getTime();
  }

  /** The handler of WEBHOOK_ATTEMPT: claims the delivery for this attempt and queues it here. */
  async runJob(payload: { delivery_id: string; attempt: number }): Promise<void> {
    const { delivery_id: id, attempt } = payload;
    const delivery = await findDelivery(this.db, id);
    // Already attempted, finished, cancelled or deleted: a stale watchdog, nothing to do.
    if (!delivery || delivery.status !== 'pending' || delivery.attempts !== attempt - 1) return;
    const now = this.realNow();
    const again = (dueAt: number) => enqueueAttempt(this.db, delivery, attempt, dueAt);
    if (this.held.has(id) || (delivery.lease_until !== null && delivery.lease_until >= now)) {
      // Held here or by another live process: this run was its watchdog; look again when the lease ends.
      await again(Math.max(delivery.lease_until ?? now, now) + 1_000);
      return;
    }
    if (!this.accepting || this.held.size >= this.tuning.maxHeld) {
      await again(now + this.tuning.busyRetryMs);
      return;
    }
    const lane = this.lanes.get(delivery.endpoint_id);
    if (lane && lane.held >= this.tuning.maxHeldPerEndpoint) {
      // A slow endpoint with a long queue: come back when the queue should have room again.
      const drainMs = (lane.held / this.tuning.perEndpointConcurrency) * Math.max(lane.averageMs, 10);
      await again(now + Math.min(this.tuning.maxDeferMs, Math.max(50, Math.round(drainMs))));
      return;
    }
    const leaseUntil = now + this.tuning.leaseMs;
    const claimed = await this.db.transaction().execute(async (trx) => {
      if (!(await claimDelivery(trx, { id, attempt, owner: this.owner, now, leaseUntil }))) return false;
      await enqueueAttempt(trx, delivery, attempt, leaseUntil + 1_000);
      return true;
    });
    if (claimed) this.hold({ id, endpointId: delivery.endpoint_id, attempt });
  }

  /**
   * POST /v1/webhooks/:id/test: a delivery of a fictional payload, made at once (outside the queues)
   * and logged like any other; one attempt, no retries. Returns the log entry.
   */
  async sendTest(endpoint: EndpointRow, payload: Record<string, unknown>, world: World) {
    const id = newId('whd');
    const now = this.realNow();
    const at = world.clock.now().toISOString();
    const row: DeliveryRow = {
      id,
      account_id: endpoint.account_id,
      livemode: endpoint.livemode,
      endpoint_id: endpoint.id,
      event_id: String(payload.id),
      event_type: String(payload.event),
      payload: JSON.stringify(payload),
      test: 1,
      status: 'pending',
      attempts: 0,
      next_attempt_at: at,
      lease_owner: this.owner,
      lease_until: now + this.tuning.leaseMs,
      created_at: at,
      completed_at: null,
    };
    await this.db.transaction().execute(async (trx) => {
      await insertDelivery(trx, row);
      await enqueueAttempt(trx, row, 1, now + this.tuning.leaseMs + 1_000);
    });
    const entry = { id, endpointId: endpoint.id, attempt: 1 };
    this.held.set(id, entry);
    this.startHeartbeat();
    try {
      return await this.track(this.attempts.run(entry));
    } finally {
      this.held.delete(id);
    }
  }

  /**
   * Stops taking attempts, lets those in flight finish for up to graceMs, interrupts the rest, and
   * hands every delivery still held back to the other workers (their jobs due at once).
   */
  async stop(graceMs = 5_000): Promise<void> {
    this.accepting = false;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const lane of this.lanes.values()) lane.queue.length = 0;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    this.shutdown.abort();
    await Promise.allSettled([...this.running]);
    try {
      await releaseLeases(this.db, this.owner, [...this.held.keys()], this.realNow());
    } catch (error) {
      this.logger.error(
        { err: error },
        'webhooks: handing held deliveries back failed; their leases will lapse',
      );
    }
    this.held.clear();
    this.lanes.clear();
    await this.http.close();
  }

  private hold(entry: Held): void {
    this.held.set(entry.id, entry);
    let lane = this.lanes.get(entry.endpointId);
    if (!lane) {
      lane = { active: 0, queue: [], held: 0, averageMs: 0 };
      this.lanes.set(entry.endpointId, lane);
    }
    lane.held++;
    lane.queue.push(entry);
    this.startHeartbeat();
    this.pump();
  }

  /** Starts queued attempts while there is room, taking endpoints in turn. */
  private pump(): void {
    while (this.accepting && this.active < this.tuning.globalConcurrency) {
      const next = this.nextLane();
      if (!next) return;
      const [endpointId, lane] = next;
      const entry = lane.queue.shift();
      if (!entry) return;
      // Round robin: the lane just served goes to the back.
      this.lanes.delete(endpointId);
      this.lanes.set(endpointId, lane);
      lane.active++;
      this.active++;
      const started = performance.now();
      void this.track(this.attempts.run(entry))
        .catch((error: unknown) =>
          this.logger.error({ err: error, delivery_id: entry.id }, 'webhooks: attempt failed to run'),
        )
        .finally(() => {
          const took = performance.now() - started;
          lane.averageMs = lane.averageMs === 0 ? took : 0.8 * lane.averageMs + 0.2 * took;
          lane.active--;
          lane.held--;
          this.active--;
          if (!this.shutdown.signal.aborted) this.held.delete(entry.id);
          if (lane.held === 0 && lane.queue.length === 0) this.lanes.delete(endpointId);
          this.pump();
        });
    }
  }

  private nextLane(): [string, Lane] | undefined {
    for (const entry of this.lanes) {
      const lane = entry[1];
      if (lane.queue.length > 0 && lane.active < this.tuning.perEndpointConcurrency) return entry;
    }
    return undefined;
  }

  private async track<T>(task: Promise<T>): Promise<T> {
    this.running.add(task);
    try {
      return await task;
    } finally {
      this.running.delete(task);
    }
  }

  private startHeartbeat(): void {
    if (this.heartbeat || !this.accepting) return;
    this.heartbeat = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.tuning.leaseMs / 3)));
    this.heartbeat.unref();
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    try {
      await renewLeases(this.db, this.owner, [...this.held.keys()], this.realNow() + this.tuning.leaseMs);
    } catch (error) {
      this.logger.warn({ err: error }, 'webhooks: renewing delivery leases failed');
    }
  }
}

const dispatchers = new WeakMap<AppServices, WebhookDispatcher>();

/** The dispatcher of these services (one per process), created on first use. */
export function webhookDispatcher(services: AppServices): WebhookDispatcher {
  let dispatcher = dispatchers.get(services);
  if (!dispatcher) {
    const logger = pino({ level: services.config.logLevel, base: { component: 'webhooks' } });
    dispatcher = new WebhookDispatcher(services, logger);
    dispatchers.set(services, dispatcher);
  }
  return dispatcher;
}

/** Graceful shutdown: call after the worker stopped, before the database closes. */
export async function stopWebhookDispatcher(services: AppServices, graceMs?: number): Promise<void> {
  await dispatchers.get(services)?.stop(graceMs);
}

/** Internal knobs (tests shorten the 30-second timeout and the lease; the benchmark raises limits). */
export function tuneWebhookDelivery(services: AppServices, tuning: Partial<DeliveryTuning>): void {
  webhookDispatcher(services).tune(tuning);
}
