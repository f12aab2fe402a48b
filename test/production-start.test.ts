import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, runBuilt, startBuilt, type Build } from './helpers/built.js';
import { DATABASES, TEST_POSTGRES_URL, type DatabaseKind } from './helpers/env.js';
import { client } from './helpers/http.js';
import { answer, eventually, startReceiver } from './helpers/receivers.js';

/**
 * The production start: `npm run build`'s dist/ run by the `intake` bin, in one process with no
 * TypeScript loader; and, with OTEL_EXPORTER_OTLP_ENDPOINT set, traces that reach an OTLP receiver
 * with a request's span and the spans of the job it enqueued, in one trace.
 */

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

interface OtlpExport {
  resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/** A local OTLP/HTTP receiver: collects the spans POSTed to /v1/traces (OTLP JSON, as the exporter sends). */
async function startOtlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces' && request.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function attribute(span: OtlpSpan, key: string): string | undefined {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : String(value.intValue));
}

/** Every process in the tree under pid (pid included): its command line. */
function processTree(pid: number): string[][] {
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return [cmdline, ...children.flatMap((child) => processTree(child))];
}

interface Target {
  env: Record<string, string>;
  remove(): Promise<void>;
}

let schemas = 0;
async function target(database: DatabaseKind): Promise<Target> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-built-'));
  if (database === 'sqlite') {
    return { env: { DATA_DIR: dataDir }, remove: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const schema = `t_built_${process.pid}_${Date.now().toString(36)}_${schemas++}`;
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    async remove() {
      const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await admin.connect();
      await admin.query(`drop schema if exists "${schema}" cascade`);
      await admin.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

let build: Build;
beforeAll(() => {
  build = buildService();
});
afterAll(() => build.remove());

describe('the build', () => {
  it('compiles every module of src/ (no test), copies the translations and bundles the browser scripts', () => {
    const dist = join(build.bin, '..', '..', 'dist');
    expect(existsSync(join(dist, 'main.js'))).toBe(true);
    expect(existsSync(join(dist, 'cli.js'))).toBe(true);
    expect(existsSync(join(dist, 'i18n', 'locales', 'en'))).toBe(true);
    expect(existsSync(join(dist, 'i18n', 'index.test.js'))).toBe(false);
    for (const name of ['portal', 'dashboard'])
      expect(existsSync(join(dist, 'web', name, 'bundle.js'))).toBe(true);
  });
});

describe.each(DATABASES)('the compiled service on %s', (database) => {
  let place: Target;
  beforeAll(async () => {
    place = await target(database);
  });
  afterAll(() => place.remove());

  it('answers /healthz from dist/ in one process with no TypeScript loader', async () => {
    const running = await startBuilt(build, place.env);
    try {
      const health = await fetch(`${running.url}/healthz`);
      expect(health.status).toBe(200);
      // A page and its script, bundled by the build (dist/web/), not at start-up.
      const page = await fetch(`${running.url}/dashboard/sign-in`);
      expect(page.status).toBe(200);
      const script = /src="(\/dashboard\/assets\/dashboard\.[0-9a-f]+\.js)"/.exec(await page.text())?.[1];
      expect(script).toBeDefined();
      expect((await fetch(`${running.url}${script ?? ''}`)).status).toBe(200);
      const tree = processTree(running.pid);
      // The bin imports dist/ in its own process: no second process (no tsx, no bundler), no loader.
      expect(tree).toHaveLength(1);
      const [service = []] = tree;
      expect(service.slice(1)).toEqual([build.bin, 'serve']);
      const environ = readFileSync(`/proc/${running.pid}/environ`, 'utf8');
      expect(environ).not.toMatch(/NODE_OPTIONS=[^\0]*(tsx|--import|--loader)/);
      expect(service.join(' ')).not.toMatch(/tsx|ts-node|--loader|--import/);
    } finally {
      await running.stop();
    }
  }, 120_000);

  it("exports a trace with the request's span and the spans of the job it enqueued", async () => {
    const otlp = await startOtlpReceiver();
    const hooks = await startReceiver(answer(200, 'ok'));
    const running = await startBuilt(build, {
      ...place.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'intake-test',
    });
    try {
      const created = JSON.parse(
        await runBuilt(
          build,
          ['accounts', 'create', '--email', `otel-${database}@example.com`, '--json'],
          place.env,
        ),
      ) as { live_key: string };
      const api = client(running.url, created.live_key);
      const endpoint = await api.post('/v1/webhooks', { url: hooks.url, events: ['intake.sent'] });
      expect(endpoint.status, endpoint.text).toBe(201);
      const intake = await api.post('/v1/intakes', {
        project_name: 'Traced',
        client: { email: 'traced@example.com' },
        items: [{ key: 'note', label: 'Note', type: 'text' }],
        chase_schedule: 'off',
      });
      expect(intake.status, intake.text).toBe(201);
      await hooks.waitFor(1);

      const jobSpan = await eventually(
        () => Promise.resolve(otlp.spans.find((span) => span.name === 'job webhook.attempt')),
        'the webhook job span',
        30_000,
      );
      const trace = () => otlp.spans.filter((span) => span.traceId === jobSpan.traceId);
      // The request's server span (POST /v1/intakes) is in the job's trace, an ancestor of the job span.
      const request = await eventually(
        () =>
          Promise.resolve(
            trace().find(
              (span) =>
                span.kind === 2 &&
                (attribute(span, 'http.route') === '/v1/intakes' ||
                  attribute(span, 'http.target') === '/v1/intakes'),
            ),
          ),
        'the request span in the job trace',
      );
      const byId = new Map(trace().map((span) => [span.spanId, span]));
      const ancestors: string[] = [];
      for (let span = byId.get(jobSpan.parentSpanId ?? ''); span; span = byId.get(span.parentSpanId ?? ''))
        ancestors.push(span.spanId);
      expect(ancestors).toContain(request.spanId);
      // The job's own work: its outgoing webhook request (undici) is a child of the job span.
      const outgoing = await eventually(
        () =>
          Promise.resolve(
            otlp.spans.find(
              (span) =>
                span.kind === 3 &&
                span.parentSpanId === jobSpan.spanId &&
                (attribute(span, 'url.full') ?? attribute(span, 'http.url')) !== undefined,
            ),
          ),
        "the job's outgoing request span",
      );
      expect(attribute(outgoing, 'url.full') ?? attribute(outgoing, 'http.url')).toBe(hooks.url);
      if (database === 'postgres') {
        // PostgreSQL queries are traced too (the request's inserts among them).
        expect(
          otlp.spans.some(
            (span) =>
              span.traceId === request.traceId &&
              (attribute(span, 'db.system.name') ?? attribute(span, 'db.system')) === 'postgresql',
          ),
        ).toBe(true);
      }
    } finally {
      await running.stop();
      await hooks.close();
      await otlp.close();
    }
  }, 180_000);
});
