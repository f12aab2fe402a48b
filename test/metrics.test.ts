import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { newId } from '../src/lib/ids.js';
import { MAX_ATTEMPTS } from '../src/jobs/worker.js';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { answer, eventually, startReceiver, type Receiver } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** Prometheus metrics on METRICS_PORT, read after real traffic. */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
        labels[pair[1] ?? ''] = pair[2] ?? '';
      return { name: match[1] ?? '', labels, value: Number(match[3]) };
    });
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v),
  );
  return found.length ? found.reduce((sum, s) => sum + s.value, 0) : undefined;
}

it('is off unless METRICS_PORT is set', () => {
  expect(loadConfig({ DATA_DIR: '/tmp/unused', SECRET_KEY: 'x'.repeat(32) }).metricsPort).toBeUndefined();
});

describe.each(DATABASES)('metrics on %s', (database) => {
  let server: TestServer;
  let hooks: Receiver;
  beforeAll(async () => {
    server = await startTestServer(database, { METRICS_PORT: '0' });
    hooks = await startReceiver(answer(200, 'ok'));
  });
  afterAll(async () => {
    await server.stop();
    await hooks.close();
  });

  async function scrape(): Promise<{ samples: Sample[]; text: string }> {
    const url = server.server.metricsUrl;
    if (!url) throw new Error('no metrics listener');
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    return { samples: parse(text), text };
  }

  it('serves /metrics on its own loopback listener, never on the public port', async () => {
    expect(server.server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(server.server.metricsUrl ?? '').port).not.toBe(new URL(server.url).port);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });

  it('exposes requests, rate limits, jobs, webhooks, messages, the pool and the process after real traffic', async () => {
    const account = await server.createAccount();
    const api = client(server.url, account.live_key);
    expect((await api.get('/v1/account')).status).toBe(200);
    expect((await api.get('/v1/intakes/int_doesnotexist00000000000')).status).toBe(404);
    const limited = await server.createAccount({ rateLimitPerHour: 1 });
    const slow = client(server.url, limited.live_key);
    expect((await slow.get('/v1/account')).status).toBe(200);
    expect((await slow.get('/v1/account')).status).toBe(429);

    // A webhook delivery and the client's email, both sent by jobs.
    expect((await api.post('/v1/webhooks', { url: hooks.url, events: ['intake.sent'] })).status).toBe(201);
    const intake = await api.post('/v1/intakes', {
      project_name: 'Metrics',
      client: { email: 'metrics@example.com' },
      items: [{ key: 'note', label: 'Note', type: 'text' }],
      chase_schedule: 'off',
    });
    expect(intake.status, intake.text).toBe(201);
    await hooks.waitFor(1);

    // A job that fails and is given up (its kind refuses the payload).
    const failing = newId('job');
    await server.server.services.db.kysely
      .insertInto('jobs')
      .values({
        id: failing,
        account_id: 'system',
        livemode: 1,
        kind: 'delete_stored_files',
        subject_id: `stored_files/${failing}`,
        payload: '{"storage_keys":[]}',
        due_at: Date.now() + 86_400_000,
        attempts: MAX_ATTEMPTS - 1,
        locked_until: null,
        last_error: null,
        created_at: new Date().toISOString(),
      })
      .execute();
    expect(await server.server.worker.runNow([failing])).toBe(1);

    const { samples, text } = await eventually(async () => {
      const scraped = await scrape();
      const delivered =
        value(scraped.samples, 'intake_webhook_deliveries_total', { outcome: 'succeeded' }) ?? 0;
      const emailed = value(scraped.samples, 'intake_messages_total', { channel: 'email' }) ?? 0;
      // One scrape reads the jobs table before it writes the counters: the delivery can be counted in
      // the scrape whose table still showed its job running. Wait for a scrape that saw it end.
      const attempting = value(scraped.samples, 'intake_jobs', { kind: 'webhook.attempt', state: 'running' });
      return delivered >= 1 && emailed >= 1 && attempting === 0 ? scraped : undefined;
    }, 'the webhook and the email to be counted, and the attempt to have ended');

    // HTTP by route pattern (never the id) and status.
    expect(
      value(samples, 'intake_http_requests_total', { route: '/v1/account', status: '200' }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      value(samples, 'intake_http_requests_total', { route: '/v1/intakes/:id', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('int_doesnotexist');
    expect(
      value(samples, 'intake_http_request_duration_seconds_count', { route: '/v1/intakes', status: '201' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(samples, 'intake_rate_limit_rejections_total', { route: '/v1/account' }),
    ).toBeGreaterThanOrEqual(1);
    // Jobs: runs and failures per kind, the table per kind and state, the oldest due job's lag.
    expect(
      value(samples, 'intake_job_runs_total', { kind: 'webhook.attempt', outcome: 'succeeded' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(samples, 'intake_job_failures_total', { kind: 'delete_stored_files' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(samples, 'intake_jobs', { kind: 'delete_stored_files', state: 'failed' }),
    ).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'intake_jobs', { kind: 'sweep_webhook_logs', state: 'queued' })).toBe(1);
    expect(value(samples, 'intake_jobs', { kind: 'webhook.attempt', state: 'running' })).toBe(0);
    expect(
      value(samples, 'intake_job_oldest_due_lag_seconds', { kind: 'webhook.attempt' }),
    ).toBeGreaterThanOrEqual(0);
    // Webhooks and messages by outcome.
    expect(value(samples, 'intake_webhook_attempts_total', { outcome: 'succeeded' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(value(samples, 'intake_messages_total', { channel: 'email' })).toBeGreaterThanOrEqual(1);
    // The database pool, and prom-client's process metrics.
    expect(value(samples, 'intake_db_pool_connections', { state: 'max' })).toBe(
      database === 'postgres' ? 10 : 1,
    );
    expect(value(samples, 'intake_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);

    // The Grafana dashboard in deploy/ reads only series this scrape has.
    const dashboard = readFileSync(
      join(import.meta.dirname, '..', 'deploy', 'grafana-dashboard.json'),
      'utf8',
    );
    const used = new Set(dashboard.match(/\b(?:intake|process|nodejs)_\w+/g));
    expect(used.size).toBeGreaterThan(10);
    const present = new Set(samples.map((sample) => sample.name));
    for (const name of used) expect(present.has(name), name).toBe(true);
  });
});
