/**
 * Webhook delivery benchmark (SQLite, everything on 127.0.0.1). See bench/README.md, "Webhooks".
 *
 * 1. Baseline: a bare HTTP POST loop (undici, keep-alive, the same concurrency as the service's
 *    per-endpoint limit) to a loopback receiver: what the receiver and the loopback can take.
 * 2. Throughput: BENCH_WEBHOOK_EVENTS events recorded through the transactional outbox (recordEvent,
 *    in batches of 100 per transaction, as state changes record them), delivered by the service's
 *    worker to one endpoint on the same receiver: deliveries per second, first event to last delivery.
 * 3. Latency: BENCH_WEBHOOK_SAMPLES real state changes through the REST API (POST /v1/intakes, which
 *    fires intake.sent), spaced out: the delay from the event's occurred_at to its arrival, median and p99.
 *
 * Environment: BENCH_WEBHOOK_EVENTS (default 2000), BENCH_WEBHOOK_SAMPLES (default 100).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { WEBHOOK_ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/webhooks.jobs.js';
import { signatureHeader } from '../src/modules/webhooks/signing.js';
import { startServer } from '../src/server.js';
import { seedSentEvents } from './seed.js';

function positiveIntFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return value;
}

const EVENTS = positiveIntFromEnv('BENCH_WEBHOOK_EVENTS', 2000);
const SAMPLES = positiveIntFromEnv('BENCH_WEBHOOK_SAMPLES', 100);
const CONCURRENCY = WEBHOOK_ENDPOINT_CONCURRENCY;
const BATCH = 100;

interface Arrival {
  at: number;
  body: string;
}

/** A receiver that answers 200 at once and notes when each request arrived. */
async function startReceiver(): Promise<{ server: Server; url: string; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrivals.push({ at: Date.now(), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/hook`, arrivals };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The baseline: signed POSTs of an event-sized body, CONCURRENCY at a time, on keep-alive connections. */
async function baseline(url: string, arrivals: Arrival[], count: number) {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const body = JSON.stringify({
    id: 'evt_baseline',
    event: 'intake.sent',
    intake_id: 'in_0000000000000000000000',
    occurred_at: new Date().toISOString(),
    livemode: true,
    project_name: 'Benchmark',
    client_email: 'bench@example.com',
    sent_at: new Date().toISOString(),
  });
  const latencies: number[] = [];
  let next = 0;
  const before = arrivals.length;
  const started = performance.now();
  async function lane(): Promise<void> {
    while (next < count) {
      next++;
      const t0 = performance.now();
      const signature = signatureHeader(body, ['whsec_baseline_000000000000000000'], Date.now() / 1000);
      const response = await request(url, {
        method: 'POST',
        body,
        dispatcher: agent,
        headers: { 'content-type': 'application/json', 'service-signature': signature },
      });
      await response.body.text();
      if (response.statusCode !== 200) throw new Error(`baseline POST answered ${response.statusCode}`);
      latencies.push(performance.now() - t0);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  if (arrivals.length - before !== count) throw new Error('baseline: the receiver missed requests');
  return { perSecond: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-webhooks-'));
  const receiver = await startReceiver();
  const running = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn' }));
  const load = { before: loadavg()[0] ?? 0, after: 0 };
  try {
    const db = running.services.db.kysely;
    const account = await createAccount(
      db,
      { email: 'bench-webhooks@example.com', plan: 'agency', rateLimitPerHour: 100_000_000 },
      new Date().toISOString(),
    );
    const auth = { authorization: `Bearer ${account.live_key}`, 'content-type': 'application/json' };
    const registered = await fetch(`${running.url}/v1/webhooks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ url: receiver.url, events: ['intake.sent'] }),
    });
    if (registered.status !== 201) throw new Error(`registering the endpoint: ${await registered.text()}`);

    process.stderr.write(`baseline: ${EVENTS} bare POSTs … `);
    const bare = await baseline(receiver.url, receiver.arrivals, EVENTS);
    process.stderr.write(`${Math.round(bare.perSecond)}/s\n`);

    process.stderr.write(`throughput: ${EVENTS} events through the outbox … `);
    const from = receiver.arrivals.length;
    const started = performance.now();
    await seedSentEvents(db, account.account_id, EVENTS, BATCH);
    const recorded = performance.now();
    await waitFor('every delivery', () => receiver.arrivals.length - from >= EVENTS, 600_000);
    const finished = performance.now();
    const throughputDelays = receiver.arrivals
      .slice(from)
      .map((a) => a.at - Date.parse((JSON.parse(a.body) as { occurred_at: string }).occurred_at));
    const perSecond = EVENTS / ((finished - started) / 1000);
    process.stderr.write(`${Math.round(perSecond)}/s\n`);

    process.stderr.write(`latency: ${SAMPLES} intakes created through the API … `);
    const latencyFrom = receiver.arrivals.length;
    for (let i = 0; i < SAMPLES; i++) {
      const created = await fetch(`${running.url}/v1/intakes`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          project_name: `Latency ${i}`,
          client: { email: 'bench@example.com' },
          items: [{ key: 'note', label: 'Note', type: 'text' }],
          chase_schedule: 'off',
        }),
      });
      if (created.status !== 201) throw new Error(`creating an intake: ${await created.text()}`);
      // Spaced out irregularly so state changes land at every phase of the worker's poll.
      await new Promise((resolve) => setTimeout(resolve, 50 + ((i * 137) % 250)));
    }
    await waitFor('the latency deliveries', () => receiver.arrivals.length - latencyFrom >= SAMPLES, 60_000);
    const delays = receiver.arrivals
      .slice(latencyFrom)
      .map((a) => a.at - Date.parse((JSON.parse(a.body) as { occurred_at: string }).occurred_at));
    process.stderr.write(`median ${percentile(delays, 50)} ms\n`);
    load.after = loadavg()[0] ?? 0;

    const results = {
      machine: { cpus: availableParallelism(), node: process.version, loadavg1: load },
      perEndpointConcurrency: CONCURRENCY,
      baseline: {
        posts: EVENTS,
        perSecond: Math.round(bare.perSecond),
        latencyP50Ms: Number(bare.p50.toFixed(2)),
        latencyP99Ms: Number(bare.p99.toFixed(2)),
      },
      throughput: {
        events: EVENTS,
        recordSeconds: Number(((recorded - started) / 1000).toFixed(2)),
        deliveriesPerSecond: Math.round(perSecond),
        delayP50Ms: percentile(throughputDelays, 50),
        delayP99Ms: percentile(throughputDelays, 99),
      },
      latency: { samples: SAMPLES, delayP50Ms: percentile(delays, 50), delayP99Ms: percentile(delays, 99) },
    };
    console.log('| Measure | Value |');
    console.log('| --- | ---: |');
    console.log(`| Baseline: bare POSTs/s (${CONCURRENCY} in flight) | ${results.baseline.perSecond} |`);
    console.log(
      `| Baseline: POST latency p50 / p99 (ms) | ${results.baseline.latencyP50Ms} / ${results.baseline.latencyP99Ms} |`,
    );
    console.log(
      `| Service: deliveries/s (${EVENTS} events, one endpoint) | ${results.throughput.deliveriesPerSecond} |`,
    );
    console.log(
      `| Service under that load: event → delivery p50 / p99 (ms) | ${results.throughput.delayP50Ms} / ${results.throughput.delayP99Ms} |`,
    );
    console.log(
      `| Service, idle: state change → delivery p50 / p99 (ms, ${SAMPLES} samples) | ${results.latency.delayP50Ms} / ${results.latency.delayP99Ms} |`,
    );
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await running.stop();
    await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
