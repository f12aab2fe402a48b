import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (prom-client). Counters live here, one registry per process, and
 * the code that does the work counts it (the HTTP hook, the rate limiter's refusal, the job worker,
 * webhook attempts, message sends); what is read from the database at scrape time (job backlog, the
 * database pool) is collected by the metrics listener (src/metrics-server.ts). Counting is cheap
 * and always on; only the listener is optional (METRICS_PORT).
 */
export const metricsRegistry = new Registry();

/**
 * How often the event loop's delay is sampled (nodejs_eventloop_lag_*), in milliseconds. prom-client's
 * default of 10 ms wakes an idle process a hundred times a second (a laptop's `serve`, a fleet of idle
 * workers) for a figure that matters only when the loop is held up; at 100 ms a hold-up longer than
 * that is still seen, and an idle process wakes about ten times a second.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

export const httpRequests = new Counter({
  name: 'intake_http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'intake_http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

export const rateLimitRejections = new Counter({
  name: 'intake_rate_limit_rejections_total',
  help: 'Requests refused with 429 by a rate limit (API keys, portal, sign-in, OAuth), by route pattern',
  labelNames: ['route'] as const,
  registers: [metricsRegistry],
});

export const jobRuns = new Counter({
  name: 'intake_job_runs_total',
  help: 'Job attempts finished by this process, by kind and outcome (succeeded, retry, failed: given up)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const jobFailures = new Counter({
  name: 'intake_job_failures_total',
  help: 'Job attempts that failed (retried or given up), by kind',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

export const webhookAttempts = new Counter({
  name: 'intake_webhook_attempts_total',
  help: 'Webhook delivery attempts recorded, by outcome (succeeded, failed, gone)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveries = new Counter({
  name: 'intake_webhook_deliveries_total',
  help: 'Webhook deliveries ended, by outcome (succeeded, failed: no attempt left)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const messagesSent = new Counter({
  name: 'intake_messages_total',
  help: 'Emails and SMS handed to their channel, by channel (email, sms) and outcome (sent, captured, dropped, bounced, failed, retry)',
  labelNames: ['channel', 'outcome'] as const,
  registers: [metricsRegistry],
});
