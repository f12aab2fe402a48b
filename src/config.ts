import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { HttpTimeouts } from './http/timeouts.js';
import { ensurePrivateDirectory } from './lib/private-files.js';
import { parseTrustProxy, type TrustProxy } from './http/trust-proxy.js';

/** Every environment variable the service reads, with its default. Documented in README.md. */
const EnvSchema = z.object({
  NODE_ENV: z.string().optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  BASE_URL: z.url().optional(),
  APP_URL: z.url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must start with postgres:// (leave it unset for SQLite)')
    .optional(),
  LISTEN_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'LISTEN_DATABASE_URL must start with postgres://')
    .optional(),
  STORAGE_URL: z.string().optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'REDIS_URL must start with redis:// or rediss://')
    .optional(),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'SMTP_URL must start with smtp:// or smtps://')
    .optional(),
  SMS_URL: z.url().optional(),
  BOUNCE_WEBHOOK_SECRET: z
    .string()
    .min(16, 'BOUNCE_WEBHOOK_SECRET must be at least 16 characters')
    .optional(),
  SECRET_KEY: z.string().min(32, 'SECRET_KEY must be at least 32 characters').optional(),
  WEBHOOK_ALLOW_PRIVATE: z.enum(['on', 'off', 'true', 'false', '1', '0']).optional(),
  MCP_ALLOWED_ORIGINS: z.string().optional(),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(1000),
  JOB_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).optional(),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional(),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).optional(),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(86_400_000).optional(),
  HTTP_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
  TRUST_PROXY: z.string().optional(),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  WEBHOOK_LOG_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  IMAGE_MAX_PIXELS: z.coerce.number().int().min(1_000_000).max(1_000_000_000).default(100_000_000),
  IMAGE_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
  THUMBNAIL_RENDERS_PER_HOUR: z.coerce.number().int().min(1).max(1_000_000).default(120),
  VALIDATION_TIME_BUDGET_MS: z.coerce.number().int().min(1).max(600_000).default(1000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BILLING_ALLOW_LOCAL: z.enum(['on', 'off', 'true', 'false', '1', '0']).optional(),
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_PRICE_SOLO: z.string().optional(),
  STRIPE_PRICE_AGENCY: z.string().optional(),
  STRIPE_API_URL: z.url().optional(),
});

export interface Config {
  production: boolean;
  port: number;
  host: string;
  baseUrl: string;
  appUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * Where workers LISTEN for wake-ups (jobs due at once): LISTEN_DATABASE_URL, a direct connection for
   * an installation whose DATABASE_URL goes through a transaction-mode pooler, with DATABASE_URL's
   * schema unless it names its own; else DATABASE_URL. Undefined on SQLite.
   */
  listenDatabaseUrl: string | undefined;
  storageUrl: string | undefined;
  redisUrl: string | undefined;
  smtpUrl: string | undefined;
  smsUrl: string | undefined;
  /** Signs POST /v1/inbound/email-events (provider bounce and spam reports); unset: the endpoint is off. */
  bounceWebhookSecret: string | undefined;
  secretKey: string;
  webhookAllowPrivate: boolean;
  /**
   * Browser origins allowed to call /mcp besides the service's own (MCP_ALLOWED_ORIGINS, comma-separated):
   * a request with any other Origin header is refused, against DNS rebinding of a local server.
   */
  mcpAllowedOrigins: string[];
  logLevel: string;
  /** BASE_URL and APP_URL were not set: they follow the port actually bound (PORT=0 picks a free one). */
  urlsFollowPort: boolean;
  /** How long readiness answers 503 on SIGTERM before the listener closes (load balancers notice). */
  shutdownGraceMs: number;
  /**
   * Proxies whose `X-Forwarded-For` names the client (TRUST_PROXY: addresses, CIDRs or a hop count);
   * false: the connecting address is the client's. Per-address limits (sign-in, portal writes) use it.
   */
  trustProxy: TrustProxy;
  /** Slow-client deadlines (src/http/timeouts.ts); unset ones keep the defaults there. */
  httpTimeouts?: Partial<HttpTimeouts>;
  /**
   * How long a worker's claim on a job (and on a webhook delivery) lasts before another worker may take
   * it over; undefined keeps the worker's default (30 seconds, renewed every 10 while a job runs).
   */
  jobLeaseMs: number | undefined;
  /** Jobs one worker runs at once; undefined keeps the worker's default (DEFAULT_CONCURRENCY). */
  workerConcurrency: number | undefined;
  /**
   * Prometheus metrics at /metrics on a listener of their own (never the public port); undefined:
   * off. 0 picks a free port (tests).
   */
  metricsPort: number | undefined;
  /** The metrics listener's address (default loopback). */
  metricsHost: string;
  /** Webhook attempt logs and finished deliveries older than this many days are swept (default 30). */
  webhookLogDays: number;
  /**
   * Image decoding: larger images (width × height from the header) are refused before decoding;
   * at most `concurrency` images are decoded at once per process (src/modules/files/images.ts);
   * previews rendered (cache misses) per network address per rolling hour.
   */
  images: { maxPixels: number; concurrency: number; thumbnailRendersPerHour: number };
  /**
   * How long checking one structured value against its item's JSON Schema may take, in ms, when
   * its cost sends it to a worker thread (src/lib/schema-budget.ts); past it the value is refused.
   */
  validationTimeBudgetMs: number;
  /** Billing: Stripe when secretKey is set, else the local provider (src/modules/billing). */
  stripe: StripeConfig;
  /**
   * Whether the local billing provider (plan changes without payment) may serve when Stripe is not
   * configured: yes outside production; in production only with BILLING_ALLOW_LOCAL=on.
   */
  billingAllowLocal: boolean;
}

export interface StripeConfig {
  secretKey: string | undefined;
  webhookSecret: string | undefined;
  /** Stripe price ids per paid plan; without one, Checkout prices the plan inline from the plan table. */
  priceIds: { solo: string | undefined; agency: string | undefined };
  /** Another Stripe API address (stripe-mock, a test double); default Stripe's own. */
  apiUrl: string | undefined;
}

export class ConfigError extends Error {}

/** "https://a.example, http://localhost:5173" → their origins; an entry that is not a URL stops the start. */
function originList(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      if (!URL.canParse(entry)) throw new ConfigError(`MCP_ALLOWED_ORIGINS: ${entry} is not an origin URL`);
      return new URL(entry).origin;
    });
}

function parseEnv(env: NodeJS.ProcessEnv): z.output<typeof EnvSchema> {
  const blankless = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = EnvSchema.safeParse(blankless);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid environment:\n  ${problems.join('\n  ')}`);
  }
  return parsed.data;
}

/**
 * Where the data lives, read from the same variables as loadConfig but touching nothing: restore
 * needs DATA_DIR untouched (loadConfig would generate a secret key into it).
 */
export function loadDataLocation(env: NodeJS.ProcessEnv = process.env): {
  dataDir: string;
  databaseUrl: string | undefined;
  storageUrl: string | undefined;
} {
  const e = parseEnv(env);
  return { dataDir: resolve(e.DATA_DIR), databaseUrl: e.DATABASE_URL, storageUrl: e.STORAGE_URL };
}

/** LISTEN_DATABASE_URL with DATABASE_URL's schema (the channel is the schema's), or DATABASE_URL. */
function listenUrl(databaseUrl: string | undefined, listen: string | undefined): string | undefined {
  if (!databaseUrl || !listen) return databaseUrl;
  const schema = new URL(databaseUrl).searchParams.get('schema');
  const url = new URL(listen);
  if (schema !== null && !url.searchParams.has('schema')) url.searchParams.set('schema', schema);
  return url.toString();
}

/** Reads the environment once, at start; an invalid value stops the process with a message naming it. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parseEnv(env);
  const production = e.NODE_ENV === 'production';
  const dataDir = resolve(e.DATA_DIR);
  const baseUrl = stripTrailingSlash(e.BASE_URL ?? `http://localhost:${e.PORT}`);
  if (e.LISTEN_DATABASE_URL && !e.DATABASE_URL) {
    throw new ConfigError(
      'LISTEN_DATABASE_URL is for PostgreSQL: set DATABASE_URL too (unset, the service runs on SQLite).',
    );
  }
  if (production && !e.SECRET_KEY) {
    throw new ConfigError('SECRET_KEY is required when NODE_ENV=production (at least 32 characters).');
  }
  const billingAllowLocal = e.BILLING_ALLOW_LOCAL
    ? ['on', 'true', '1'].includes(e.BILLING_ALLOW_LOCAL)
    : !production;
  let trustProxy: TrustProxy;
  try {
    trustProxy = parseTrustProxy(e.TRUST_PROXY);
  } catch (error) {
    throw new ConfigError(`Invalid environment:\n  TRUST_PROXY: ${(error as Error).message}`);
  }
  const allowPrivate = e.WEBHOOK_ALLOW_PRIVATE
    ? ['on', 'true', '1'].includes(e.WEBHOOK_ALLOW_PRIVATE)
    : !production;
  return {
    production,
    port: e.PORT,
    host: e.HOST,
    baseUrl,
    appUrl: stripTrailingSlash(e.APP_URL ?? baseUrl),
    dataDir,
    databaseUrl: e.DATABASE_URL,
    listenDatabaseUrl: listenUrl(e.DATABASE_URL, e.LISTEN_DATABASE_URL),
    storageUrl: e.STORAGE_URL,
    redisUrl: e.REDIS_URL,
    smtpUrl: e.SMTP_URL,
    smsUrl: e.SMS_URL,
    bounceWebhookSecret: e.BOUNCE_WEBHOOK_SECRET,
    secretKey: e.SECRET_KEY ?? generatedSecretKey(dataDir),
    webhookAllowPrivate: allowPrivate,
    mcpAllowedOrigins: originList(e.MCP_ALLOWED_ORIGINS),
    logLevel: e.LOG_LEVEL,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    trustProxy,
    httpTimeouts: {
      ...(e.HTTP_HEADERS_TIMEOUT_MS ? { headersMs: e.HTTP_HEADERS_TIMEOUT_MS } : {}),
      ...(e.HTTP_REQUEST_TIMEOUT_MS ? { requestMs: e.HTTP_REQUEST_TIMEOUT_MS } : {}),
      ...(e.HTTP_IDLE_TIMEOUT_MS ? { idleMs: e.HTTP_IDLE_TIMEOUT_MS } : {}),
    },
    jobLeaseMs: e.JOB_LEASE_MS,
    workerConcurrency: e.WORKER_CONCURRENCY,
    images: {
      maxPixels: e.IMAGE_MAX_PIXELS,
      concurrency: e.IMAGE_CONCURRENCY,
      thumbnailRendersPerHour: e.THUMBNAIL_RENDERS_PER_HOUR,
    },
    validationTimeBudgetMs: e.VALIDATION_TIME_BUDGET_MS,
    urlsFollowPort: !e.BASE_URL && !e.APP_URL,
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    webhookLogDays: e.WEBHOOK_LOG_DAYS,
    stripe: {
      secretKey: e.STRIPE_SECRET_KEY,
      webhookSecret: e.STRIPE_WEBHOOK_SECRET,
      priceIds: { solo: e.STRIPE_PRICE_SOLO, agency: e.STRIPE_PRICE_AGENCY },
      apiUrl: e.STRIPE_API_URL,
    },
    billingAllowLocal,
  };
}

function stripTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Without SECRET_KEY, one is generated once into DATA_DIR (mode 0600) so restarts keep signed URLs valid. */
function generatedSecretKey(dataDir: string): string {
  const file = join(dataDir, 'secret.key');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    ensurePrivateDirectory(dataDir);
    const secret = randomBytes(32).toString('hex');
    try {
      writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
      return secret;
    } catch {
      // Another process created it first: use theirs.
      return readFileSync(file, 'utf8').trim();
    }
  }
}
