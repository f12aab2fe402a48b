import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpRequestMetrics } from './metrics.js';

describe('HttpRequestMetrics', () => {
  it("scrapes exactly as prom-client's own Counter and Histogram fed the same answers", async () => {
    const ours = new Registry();
    const metrics = new HttpRequestMetrics();
    metrics.register(ours);

    const theirs = new Registry();
    const labelNames = ['method', 'route', 'status'] as const;
    const counter = new Counter({
      name: 'intake_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames,
      registers: [theirs],
    });
    const histogram = new Histogram({
      name: 'intake_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route pattern and status',
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [theirs],
    });

    const answers: [string, string, number, number][] = [
      ['GET', '/v1/account', 200, 0.0012],
      ['GET', '/v1/account', 200, 0.005],
      ['GET', '/v1/account', 304, 0.0004],
      ['POST', '/v1/intakes', 201, 0.031],
      ['GET', '/v1/intakes/:id', 404, 0.25],
      ['GET', 'unmatched', 404, 12.5],
      ['GET', '/v1/account', 200, 0.7],
      ['POST', '/v1/intakes', 201, 10],
    ];
    for (const [method, route, status, seconds] of answers) {
      metrics.observe(method, route, status, seconds);
      const labels = { method, route, status: String(status) };
      counter.inc(labels);
      histogram.observe(labels, seconds);
    }

    // The text the metrics listener serves (src/metrics-server.ts), byte for byte.
    const scraped = await ours.metrics();
    expect(scraped).toBe(await theirs.metrics());
    expect(scraped).toContain(
      'intake_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="unmatched",status="404"} 1',
    );

    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
