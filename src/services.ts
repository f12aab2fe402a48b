import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { JobRunner } from './jobs/jobs.js';
import type { RateLimiter } from './http/rate-limit/limiter.js';
import type { Clock } from './lib/clock.js';
import type { SchemaChecker } from './lib/schema-budget.js';
import type { Mailer } from './modules/notify/mailer.js';
import type { SmsProvider } from './modules/notify/sms.js';
import type { Storage } from './modules/files/storage.js';

/** What the modules are given: providers chosen once by configuration, and the system clock. */
export interface AppServices {
  config: Config;
  db: Db;
  limiter: RateLimiter;
  storage: Storage;
  mailer: Mailer;
  sms: SmsProvider;
  clock: Clock;
  /** This process's job worker, for requests that run a job at once (test mode, a manual chase). */
  jobs: JobRunner;
  lifecycle: { draining: boolean };
  /** Checks structured values against their schema under VALIDATION_TIME_BUDGET_MS (lib/schema-budget.ts). */
  schemaChecks: SchemaChecker;
}
