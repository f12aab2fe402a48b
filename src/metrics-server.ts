import { createServer, type Server } from 'node:http';
import { Gauge, Registry } from 'prom-client';
import { jobBacklog, type KindBacklog } from './jobs/admin.js';
import { definedKinds } from './jobs/jobs.js';
import { metricsRegistry } from './lib/metrics.js';
import type { AppServices } from './services.js';

/**
 * Prometheus metrics at /metrics on a listener of its own (METRICS_PORT, loopback by default), so
 * the public port never exposes them by accident. A scrape reads the process's counters and, from the
 * database, the job backlog per kind and the pool's use: every API and worker process reports the same
 * job table, so dashboards take max(), not sum(), of the job gauges.
 */
export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

function databaseGauges(services: AppServices): Registry {
  const registry = new Registry();
  // One query per scrape for both job gauges (a scrape collects them concurrently).
  let reading: Promise<Map<string, KindBacklog>> | undefined;
  const backlog = () =>
    (reading ??= jobBacklog(services.db, services.clock.now().getTime())
      .then((rows) => new Map(rows.map((row) => [row.kind, row])))
      .finally(() => setImmediate(() => (reading = undefined))));
  const kinds = (byKind: Map<string, KindBacklog>) => new Set([...definedKinds(), ...byKind.keys()]);
  new Gauge({
    name: 'intake_jobs',
    help: 'Jobs in the job table, by kind and state (queued, running, failed)',
    labelNames: ['kind', 'state'] as const,
    registers: [registry],
    async collect() {
      const byKind = await backlog();
      this.reset();
      for (const kind of kinds(byKind)) {
        const row = byKind.get(kind);
        this.set({ kind, state: 'queued' }, row?.queued ?? 0);
        this.set({ kind, state: 'running' }, row?.running ?? 0);
        this.set({ kind, state: 'failed' }, row?.failed ?? 0);
      }
    },
  });
  new Gauge({
    name: 'intake_job_oldest_due_lag_seconds',
    help: 'How long the oldest due job waits for a worker, by kind (0: none waiting)',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      const byKind = await backlog();
      this.reset();
      for (const kind of kinds(byKind)) this.set({ kind }, (byKind.get(kind)?.oldestDueLagMs ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'intake_db_pool_connections',
    help: 'Database connections: max (pool size), total (open), idle, waiting (queries queued for one)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const use = services.db.poolUse();
      for (const [state, value] of Object.entries(use)) this.set({ state }, value);
    },
  });
  return registry;
}

export async function startMetricsServer(
  services: AppServices,
  listen: { port: number; host: string },
): Promise<MetricsServer> {
  const database = databaseGauges(services);
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Not found: GET /metrics\n');
      return;
    }
    Promise.all([metricsRegistry.metrics(), database.metrics()]).then(
      ([process, fromDatabase]) => {
        response.writeHead(200, { 'content-type': metricsRegistry.contentType });
        response.end(`${process}\n${fromDatabase}`);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        response.end(`metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : listen.port;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
