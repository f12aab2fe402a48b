import { collectDefaultMetrics, Counter, Registry, type Metric } from 'prom-client';

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

/** The buckets of intake_http_request_duration_seconds, in seconds. */
const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** One method, route pattern and status: its answers and their durations. */
interface HttpSeries {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Answers per bucket (not cumulative): index i counts those over bucket i - 1 and within bucket i. */
  inBucket: number[];
}

/**
 * intake_http_requests_total and intake_http_request_duration_seconds: every answer counted by method,
 * route pattern and status. Counted here rather than through prom-client's Counter and Histogram, whose
 * every call checks and hashes its labels (about 3 µs of each request, a tenth of a polled read's
 * time): a series is found by one string key. The registry formats both as its own metrics, so the
 * scrape is the same.
 */
export class HttpRequestMetrics {
  private readonly series = new Map<string, HttpSeries>();

  /** Counts one answer; `seconds`, the time it took. */
  observe(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${method} ${statusCode} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      series = {
        labels: { method, route, status: String(statusCode) },
        count: 0,
        sum: 0,
        inBucket: HTTP_DURATION_BUCKETS.map(() => 0),
      };
      this.series.set(key, series);
    }
    series.count++;
    series.sum += seconds;
    const bucket = HTTP_DURATION_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) series.inBucket[bucket] = (series.inBucket[bucket] ?? 0) + 1;
  }

  /** The two metrics as prom-client's registry reads a metric (name, help, type, get, reset). */
  register(registry: Registry): void {
    const reset = () => this.series.clear();
    const metric = (name: string, help: string, type: string, values: (series: HttpSeries) => object[]) => {
      const header = { name, help, type, aggregator: 'sum' };
      const get = () => Promise.resolve({ ...header, values: [...this.series.values()].flatMap(values) });
      // prom-client types a metric as one of its own classes; its registry reads only these fields.
      return { ...header, get, reset } as unknown as Metric;
    };
    registry.registerMetric(
      metric(
        'intake_http_requests_total',
        'HTTP requests answered, by method, route pattern and status',
        'counter',
        (s) => [{ labels: s.labels, value: s.count }],
      ),
    );
    const duration = 'intake_http_request_duration_seconds';
    registry.registerMetric(
      metric(
        duration,
        'Time to answer an HTTP request, by method, route pattern and status',
        'histogram',
        (s) => histogramValues(duration, s),
      ),
    );
  }
}

/** A series as prom-client's Histogram exports it: cumulative buckets (`le`), +Inf, the sum, the count. */
function histogramValues(name: string, series: HttpSeries) {
  let cumulative = 0;
  const buckets = HTTP_DURATION_BUCKETS.map((bound, index) => {
    cumulative += series.inBucket[index] ?? 0;
    return { labels: { le: bound, ...series.labels }, value: cumulative, metricName: `${name}_bucket` };
  });
  return [
    ...buckets,
    { labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: `${name}_bucket` },
    { labels: series.labels, value: series.sum, metricName: `${name}_sum` },
    { labels: series.labels, value: series.count, metricName: `${name}_count` },
  ];
}

export const httpRequestMetrics = new HttpRequestMetrics();
httpRequestMetrics.register(metricsRegistry);

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
