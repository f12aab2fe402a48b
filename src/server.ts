import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, type Config } from './config.js';
import { migrateToLatest, openDatabase } from './db/database.js';
import type { RateLimiter } from './http/rate-limit/limiter.js';
import { MemoryRateLimiter } from './http/rate-limit/memory.js';
import { RedisRateLimiter } from './http/rate-limit/redis.js';
import { systemClock } from './lib/clock.js';
import { LocalStorage, type Storage } from './modules/files/storage.js';
import { OutboxMailer, SmtpMailer, type Mailer } from './modules/notify/mailer.js';
import type { AppServices } from './services.js';

function chooseStorage(config: Config): Storage {
  if (config.storageUrl) {
    throw new ConfigError(
      'STORAGE_URL is not supported by this version yet; leave it unset to store files in DATA_DIR.',
    );
  }
  return new LocalStorage(join(config.dataDir, 'files'));
}

function chooseLimiter(config: Config): RateLimiter {
  return config.redisUrl ? new RedisRateLimiter(config.redisUrl) : new MemoryRateLimiter();
}

function chooseMailer(config: Config): Mailer {
  return config.smtpUrl ? new SmtpMailer(config.smtpUrl) : new OutboxMailer();
}

/** Opens the database (migrated) and the providers chosen by configuration. */
export async function createServices(config: Config): Promise<AppServices> {
  const db = openDatabase(config);
  await migrateToLatest(db, config.databaseUrl);
  return {
    config,
    db,
    limiter: chooseLimiter(config),
    storage: chooseStorage(config),
    mailer: chooseMailer(config),
    clock: systemClock,
    lifecycle: { draining: false },
  };
}

export async function closeServices(services: AppServices): Promise<void> {
  services.mailer.close();
  await services.limiter.close();
  await services.db.close();
}

export interface RunningServer {
  app: FastifyInstance;
  services: AppServices;
  url: string;
  /** Drains: readiness turns 503, new work is refused, in-flight requests finish, pools close. */
  stop(graceMs?: number): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const services = await createServices(config);
  const app = await buildApp(services);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (config.urlsFollowPort && port !== config.port) {
    config.baseUrl = `http://localhost:${port}`;
    config.appUrl = config.baseUrl;
  }
  let stopping: Promise<void> | undefined;
  return {
    app,
    services,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    stop(graceMs = 0) {
      stopping ??= (async () => {
        services.lifecycle.draining = true;
        if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
        await app.close();
        await closeServices(services);
      })();
      return stopping;
    },
  };
}
