import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino, type DestinationStream } from 'pino';
import { buildApp } from './app.js';
import { ConfigError, type Config } from './config.js';
import { migrateToLatest, openDatabase } from './db/database.js';
import type { RateLimiter } from './http/rate-limit/limiter.js';
import { MemoryRateLimiter } from './http/rate-limit/memory.js';
import { RECURRING_JOBS, registerJobHandlers } from './job-handlers.js';
import './subscribers.js';
import { noJobRunner } from './jobs/jobs.js';
import { planRecurringJobs } from './jobs/recurring.js';
import { listenForDueJobs, onLocalJobDue, onLocalJobWrite, type JobListener } from './jobs/wakeup.js';
import { Worker } from './jobs/worker.js';
import { systemClock } from './lib/clock.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import { configureImageWork } from './modules/files/images.js';
import { keepPreviewsClean, scheduleOrphanSweep } from './modules/files/stored-files.service.js';
import { LocalStorage, type Storage } from './modules/files/storage.js';
import { OutboxMailer, SmtpMailer, type Mailer } from './modules/notify/mailer.js';
import { smsProviderFromUrl, type SmsProvider } from './modules/notify/sms.js';
import { closeWebhookDelivery } from './modules/webhooks/attempt.js';
import type { AppServices } from './services.js';
import { SchemaChecker } from './lib/schema-budget.js';
import { ensurePrivateDirectory } from './lib/private-files.js';

/**
 * The S3 SDK and the Redis client are loaded only when configured: together they hold about 40 MB of
 * a process that uses neither (the embedded default: files in DATA_DIR, limits in memory).
 */
async function chooseStorage(config: Config): Promise<Storage> {
  if (config.storageUrl) {
    if (config.storageUrl.startsWith('s3://')) {
      const { S3Storage } = await import('./modules/files/s3-storage.js');
      return S3Storage.fromUrl(config.storageUrl);
    }
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(config.storageUrl)?.[1];
    throw new ConfigError(
      `STORAGE_URL must start with s3:// (s3://bucket?endpoint=…&region=…)${scheme ? `, not ${scheme}://` : ''}; leave it unset to store files in DATA_DIR.`,
    );
  }
  ensurePrivateDirectory(config.dataDir);
  return new LocalStorage(join(config.dataDir, 'files'));
}

async function chooseLimiter(config: Config): Promise<RateLimiter> {
  if (!config.redisUrl) return new MemoryRateLimiter();
  const { RedisRateLimiter } = await import('./http/rate-limit/redis.js');
  return new RedisRateLimiter(config.redisUrl);
}

function chooseMailer(config: Config): Mailer {
  return config.smtpUrl ? new SmtpMailer(config.smtpUrl) : new OutboxMailer();
}

function chooseSms(config: Config): SmsProvider {
  try {
    return smsProviderFromUrl(config.smsUrl);
  } catch (error) {
    throw new ConfigError(`SMS_URL: ${(error as Error).message}`);
  }
}

/** Opens the database (migrated) and the providers chosen by configuration. */
export async function createServices(config: Config): Promise<AppServices> {
  configureImageWork(config.images.concurrency);
  // Storage first: a wrong STORAGE_URL is refused before the database is opened.
  const storage = await chooseStorage(config);
  const db = openDatabase({
    ...config,
    warn: (message) => pino({ level: config.logLevel, base: { component: 'database' } }).warn(message),
  });
  await migrateToLatest(db, config.databaseUrl);
  return {
    config,
    db,
    limiter: await chooseLimiter(config),
    storage,
    mailer: chooseMailer(config),
    sms: chooseSms(config),
    clock: systemClock,
    jobs: noJobRunner,
    lifecycle: { draining: false },
    schemaChecks: new SchemaChecker(config.validationTimeBudgetMs),
  };
}

export async function closeServices(services: AppServices): Promise<void> {
  services.mailer.close();
  services.storage.close?.();
  await services.schemaChecks.close();
  await services.limiter.close();
  await services.db.close();
}

/** How often an idle worker looks for due jobs. */
export const WORKER_POLL_INTERVAL_MS = 1000;

/** The job worker over these services, with every production handler registered (and checked). */
export function createWorker(services: AppServices): Worker {
  const logger = pino({ level: services.config.logLevel, base: { component: 'worker' } });
  const worker = new Worker({
    db: services.db,
    clock: services.clock,
    logger,
    pollIntervalMs: WORKER_POLL_INTERVAL_MS,
    ...(services.config.jobLeaseMs ? { leaseMs: services.config.jobLeaseMs } : {}),
    ...(services.config.workerConcurrency ? { concurrency: services.config.workerConcurrency } : {}),
  });
  registerJobHandlers(worker, services);
  services.jobs = worker;
  return worker;
}

/**
 * Starts polling, and wakes the worker for jobs due at once to skip the wait: on PostgreSQL by
 * LISTEN/NOTIFY (jobs enqueued by any process; LISTEN_DATABASE_URL, else DATABASE_URL), on SQLite when
 * this process enqueues one.
 */
function startPolling(services: AppServices, worker: Worker): JobListener {
  worker.start();
  const { listenDatabaseUrl } = services.config;
  if (services.db.dialect !== 'postgres' || !listenDatabaseUrl) {
    const unsubscribe = onLocalJobDue(services.db.kysely, () => worker.nudge());
    // A job due now that this process writes is taken by its worker as it is written, when it has room.
    const stopTaking = onLocalJobWrite(services.db.kysely, (job) => worker.takeAtWrite(job));
    return {
      ready: Promise.resolve(),
      close: () => {
        unsubscribe();
        stopTaking();
        return Promise.resolve();
      },
    };
  }
  const logger = pino({ level: services.config.logLevel, base: { component: 'worker' } });
  return listenForDueJobs(listenDatabaseUrl, () => worker.nudge(), logger);
}

function startMetrics(services: AppServices): Promise<MetricsServer | undefined> {
  const { metricsPort, metricsHost } = services.config;
  if (metricsPort === undefined) return Promise.resolve(undefined);
  return startMetricsServer(services, { port: metricsPort, host: metricsHost });
}

/** At a worker's start: the recurring system jobs, each planned unless it already is. */
async function planBackgroundWork(services: AppServices): Promise<void> {
  await scheduleOrphanSweep(services);
  await planRecurringJobs(services.db.kysely, Object.values(RECURRING_JOBS), services.clock.now().getTime());
}

export interface StartServerOptions {
  /** Run the job worker in this process (`serve`, the default); `api` leaves it to `worker` processes. */
  runWorker?: boolean;
  /** Where the HTTP app's log lines go (the benchmarks write them to a file); stdout by default. */
  logStream?: DestinationStream;
}

export interface RunningServer {
  app: FastifyInstance;
  services: AppServices;
  /** The job worker (polling only when started with runWorker); test_helpers/advance_clock runs due jobs with it. */
  worker: Worker;
  url: string;
  /** The metrics listener's /metrics address (METRICS_PORT set), else undefined. */
  metricsUrl: string | undefined;
  /** Drains: readiness turns 503, new work is refused, in-flight requests finish, pools close. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Closes the HTTP app: in-flight requests finish, keep-alive connections close. Node closes the
 * connections that are idle when closing starts; one whose response was still being written then turns
 * idle a moment later and would otherwise stay open until its keep-alive timeout (72 s), holding the
 * close. Idle connections are therefore closed again until the close completes.
 */
async function closeApp(app: FastifyInstance): Promise<void> {
  const closing = app.close();
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await closing;
  } finally {
    clearInterval(sweeper);
  }
}

export async function startServer(config: Config, options: StartServerOptions = {}): Promise<RunningServer> {
  const services = await createServices(config);
  let worker: Worker;
  let app: FastifyInstance;
  let metrics: MetricsServer | undefined;
  const runWorker = options.runWorker ?? true;
  try {
    worker = createWorker(services);
    if (runWorker) await planBackgroundWork(services);
    app = await buildApp(services, worker, options.logStream);
    metrics = await startMetrics(services);
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await metrics?.close();
    await closeServices(services);
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (config.urlsFollowPort && port !== config.port) {
    config.baseUrl = `http://localhost:${port}`;
    config.appUrl = config.baseUrl;
  }
  const listener = runWorker ? startPolling(services, worker) : undefined;
  // The worker's sweep removes previews of gone files on its own disk; an api process sweeps its own.
  const stopPreviewSweep = runWorker
    ? undefined
    : keepPreviewsClean(services, (error) => app.log.warn({ err: error }, 'preview sweep failed'));
  let stopping: Promise<void> | undefined;
  return {
    app,
    services,
    worker,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    metricsUrl: metrics?.url,
    stop(graceMs = 0) {
      stopping ??= (async () => {
        services.lifecycle.draining = true;
        stopPreviewSweep?.();
        await listener?.close();
        await worker.stop();
        if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
        await closeApp(app);
        await metrics?.close();
        await closeWebhookDelivery(services);
        await closeServices(services);
      })();
      return stopping;
    },
  };
}

export interface RunningWorker {
  services: AppServices;
  worker: Worker;
  /** The metrics listener's /metrics address (METRICS_PORT set), else undefined. */
  metricsUrl: string | undefined;
  /** Stops polling, waits for the jobs in flight, closes the pools. */
  stop(): Promise<void>;
}

/** The `worker` role alone: no HTTP listener. */
export async function startWorker(config: Config): Promise<RunningWorker> {
  const services = await createServices(config);
  let worker: Worker;
  let metrics: MetricsServer | undefined;
  try {
    worker = createWorker(services);
    await planBackgroundWork(services);
    metrics = await startMetrics(services);
  } catch (error) {
    await closeServices(services);
    throw error;
  }
  const listener = startPolling(services, worker);
  let stopping: Promise<void> | undefined;
  return {
    services,
    worker,
    metricsUrl: metrics?.url,
    stop() {
      stopping ??= (async () => {
        services.lifecycle.draining = true;
        await listener?.close();
        await worker.stop();
        await metrics?.close();
        await closeWebhookDelivery(services);
        await closeServices(services);
      })();
      return stopping;
    },
  };
}
