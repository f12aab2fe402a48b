import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import {
  bodyCases,
  fuzzRuns,
  fuzzSeed,
  nastyString,
  pathCases,
  queryCases,
  type BodyCase,
} from './helpers/fuzz-inputs.js';
import { createIntake, createWorld, type HardeningWorld } from './helpers/hardening-world.js';
import {
  encodeSegment,
  fetchOpenApi,
  fillPath,
  operationName,
  operationsOf,
  ResponseValidator,
  type OpenApiDocument,
  type Operation,
} from './helpers/openapi-contract.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Every operation of /v1/openapi.json (portal API included) gets generated bad input: wrong, missing
 * and extra fields, malformed and deeply nested JSON, huge strings and arrays, odd Unicode, traversal
 * in ids, bad query values, wrong content types, empty bodies. Every answer must be a documented
 * status with a body matching the document, 4xx with the error envelope, never a 5xx or a hang, and
 * the process's memory must stay bounded. Runs are bounded (FUZZ_RUNS per operation) and seeded
 * (FUZZ_SEED; fast-check prints the seed and the failing input on a failure).
 */

const REQUEST_DEADLINE_MS = 15_000;
const RSS_GROWTH_LIMIT_BYTES = 256 * 1024 ** 2;
const PATH_VALUE_CAP = 4_000;

/** Operations that would end the fixtures the others need run last, and never on the real ids. */
const destructive = (op: Operation) => op.method === 'DELETE';

export interface FuzzTally {
  operations: number;
  inputs: number;
  statuses: Record<string, number>;
  /** Bad bodies an operation accepted (2xx): worth a look, though many are "no body needed". */
  acceptedBodies: Record<string, number>;
}

interface Sent {
  status: number;
  contentType: string | null;
  body: unknown;
  requestIdHeader: string | null;
}

async function send(
  url: string,
  method: string,
  auth: string | undefined,
  body: BodyCase | undefined,
): Promise<Sent> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = `Bearer ${auth}`;
  let payload: string | undefined;
  if (body?.kind === 'json') {
    payload = JSON.stringify(body.value);
    headers['content-type'] = 'application/json';
  } else if (body?.kind === 'raw') {
    payload = body.text;
    if (body.contentType) headers['content-type'] = body.contentType;
  }
  const response = await fetch(url, {
    method,
    headers,
    body: method === 'GET' ? undefined : payload,
    signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
    redirect: 'manual',
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: kept as text (a page or bytes), checked by status only.
  }
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: parsed,
    requestIdHeader: response.headers.get('x-request-id'),
  };
}

/** What is wrong with an answer, as short lines (empty when it is sound). */
function problemsWith(op: Operation, validator: ResponseValidator, sent: Sent): string[] {
  const problems: string[] = [];
  if (sent.status >= 500) {
    problems.push(
      `${operationName(op)} answered ${sent.status}: ${JSON.stringify(sent.body)?.slice(0, 200)}`,
    );
  }
  problems.push(...validator.check(op, sent.status, sent.contentType, sent.body));
  if (sent.status >= 400) {
    const error = sent.body as { error?: unknown; message?: unknown; request_id?: unknown } | undefined;
    const enveloped =
      typeof error?.error === 'string' &&
      typeof error.message === 'string' &&
      error.request_id === sent.requestIdHeader;
    if (!enveloped) problems.push(`${operationName(op)} ${sent.status}: not the error envelope`);
  }
  return problems;
}

describe.each(DATABASES)('fuzzing every documented operation on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;
  let doc: OpenApiDocument;
  let validator: ResponseValidator;
  const tally: FuzzTally = { operations: 0, inputs: 0, statuses: {}, acceptedBodies: {} };

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
    doc = await fetchOpenApi(server.url);
    validator = new ResponseValidator(doc);
  });
  afterAll(async () => {
    await server?.stop();
    console.info(`fuzz summary (${database}): ${JSON.stringify(tally)}`);
  });

  it('the document lists the operations of every module, the portal API included', () => {
    const names = operationsOf(doc).map(operationName);
    expect(names).toContain('POST /v1/intakes');
    expect(names).toContain('PUT /portal/api/{intake_id}/items/{key}');
    expect(names.length).toBeGreaterThan(40);
  });

  it('answers every bad input with a documented 4xx, never a 5xx, a hang or unbounded memory', async () => {
    const operations = operationsOf(doc).sort((a, b) => Number(destructive(a)) - Number(destructive(b)));
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    // Problem → the first input that showed it; every operation runs before the verdict.
    const problems = new Map<string, string>();
    for (const op of operations) {
      tally.operations++;
      const takesBody = op.method !== 'GET' && op.method !== 'DELETE';
      const input = fc.record({
        path: pathCases(op),
        query: queryCases(op),
        body: takesBody ? bodyCases(op) : fc.constant(undefined),
      });
      await fc.assert(
        fc.asyncProperty(input, async ({ path, query, body }) => {
          const values: Record<string, string> = {};
          for (const name of op.pathParams) {
            const fuzzed = path.values[name];
            // DELETE never aims at the real ids: that would remove the fixtures mid-run.
            const real = destructive(op) ? 'does_not_exist' : world.idFor(op.path, name);
            values[name] = fuzzed === undefined ? real : fuzzed.slice(0, PATH_VALUE_CAP);
          }
          const url = `${server.url}${fillPath(op.path, values)}${query ? `?${query}` : ''}`;
          const key = op.path.startsWith('/v1/test_helpers') ? world.testKey : world.liveKey;
          const sent = await send(url, op.method, op.scope ? key : undefined, body);
          tally.inputs++;
          tally.statuses[sent.status] = (tally.statuses[sent.status] ?? 0) + 1;
          if (body && sent.status < 300) {
            const name = `${operationName(op)} (${body.label.slice(0, 40)})`;
            tally.acceptedBodies[name] = (tally.acceptedBodies[name] ?? 0) + 1;
          }
          for (const problem of problemsWith(op, validator, sent)) {
            if (!problems.has(problem)) problems.set(problem, body?.label ?? `query ${query}`);
          }
        }),
        { seed: fuzzSeed(), numRuns: fuzzRuns(), endOnFailure: true },
      );
    }
    const found = [...problems].map(([problem, input]) => `${problem} [input: ${input.slice(0, 80)}]`);
    expect(found, `seed ${fuzzSeed()}, ${fuzzRuns()} runs per operation`).toEqual([]);
    global.gc?.();
    const growth = process.memoryUsage().rss - rssBefore;
    console.info(`fuzz rss growth (${database}): ${Math.round(growth / 1024 / 1024)} MiB`);
    expect(growth).toBeLessThan(RSS_GROWTH_LIMIT_BYTES);
    // The server still answers normally after all that.
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(tally.inputs).toBe(tally.operations * fuzzRuns());
  }, 240_000);
});

/** Base64 as tus metadata wants it; garbage stays garbage. */
const b64 = (text: string) => Buffer.from(text.replace(/[\uD800-\uDFFF]/gu, '\uFFFD')).toString('base64');

/**
 * The portal routes the document hides (tus resumable uploads, the no-script form posts): the same
 * rule, no 5xx and no hang, checked by status since the document does not describe them.
 */
describe.each(DATABASES)('fuzzing the portal routes outside the document on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;
  const statuses: Record<string, number> = {};
  const count = (status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);
  /** A real upload in progress, so transfers reach the upload itself and not only its absence. */
  let uploadId = '';
  let intakeId = '';

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
    intakeId = await createIntake(world.api, {
      items: [{ key: 'docs', label: 'Docs', type: 'file_list', constraints: { max_count: 20 } }],
    });
    const created = await fetch(`${server.url}/portal/api/${intakeId}/items/docs/tus`, {
      method: 'POST',
      headers: {
        'tus-resumable': '1.0.0',
        'upload-length': '4096',
        'upload-metadata': `filename ${b64('logo.png')},filetype ${b64('image/png')}`,
      },
    });
    expect(created.status).toBe(201);
    uploadId = created.headers.get('location')?.split('/').pop() ?? '';
    expect(uploadId).not.toBe('');
  });
  afterAll(async () => {
    await server?.stop();
    console.info(`hidden portal routes (${database}): ${JSON.stringify(statuses)}`);
  });

  const header = fc.oneof(
    fc.constantFrom('', '-1', '0', '1e309', '99999999999999999999', 'abc', '1.5', ' 10 ', '0x10'),
    nastyString.map((value) => value.replace(/[^\x20-\x7e]/g, '').slice(0, 2_000)),
  );

  it('answers tus creation, transfer and probing requests with bad headers without a 5xx', async () => {
    const creation = fc.record({
      length: header,
      metadata: fc.oneof(
        header,
        nastyString.map((name) => `filename ${b64(name.slice(0, 5_000))},filetype ${b64('image/png')}`),
        fc.constant('filename,filetype'),
        fc.constant(`filename ${'A'.repeat(60_000)}`),
      ),
      resumable: fc.constantFrom('1.0.0', '0.2.2', '', 'x'),
      key: fc.oneof(
        fc.constant('logo'),
        nastyString.map((key) => key.slice(0, 300)),
      ),
    });
    await fc.assert(
      fc.asyncProperty(creation, async ({ length, metadata, resumable, key }) => {
        const response = await fetch(`${server.url}/portal/api/${intakeId}/items/${encodeSegment(key)}/tus`, {
          method: 'POST',
          headers: { 'tus-resumable': resumable, 'upload-length': length, 'upload-metadata': metadata },
          signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
        });
        await response.arrayBuffer();
        count(response.status);
        expect(response.status, `${length} ${metadata.slice(0, 80)}`).toBeLessThan(500);
      }),
      { seed: fuzzSeed(), numRuns: fuzzRuns() * 2, endOnFailure: true },
    );

    const transfer = fc.record({
      method: fc.constantFrom('PATCH', 'HEAD', 'DELETE'),
      real: fc.boolean(),
      fakeId: fc.oneof(
        fc.constant('0123456789abcdef'),
        nastyString.map((id) => id.slice(0, 300)),
      ),
      offset: header,
      contentType: fc.constantFrom('application/offset+octet-stream', 'application/json', 'text/plain'),
    });
    await fc.assert(
      fc.asyncProperty(transfer, async ({ method, real, fakeId, offset, contentType }) => {
        const id = real ? uploadId : fakeId;
        // DELETE ends an upload: it is tried on made-up ids only, so the real one stays for the others.
        const verb = real && method === 'DELETE' ? 'HEAD' : method;
        const response = await fetch(
          `${server.url}/portal/api/${intakeId}/items/docs/tus/${encodeSegment(id)}`,
          {
            method: verb,
            headers: { 'tus-resumable': '1.0.0', 'upload-offset': offset, 'content-type': contentType },
            body: verb === 'PATCH' ? 'x'.repeat(64) : undefined,
            signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
          },
        );
        await response.arrayBuffer();
        count(response.status);
        expect(response.status, `${verb} ${id.slice(0, 40)} ${offset}`).toBeLessThan(500);
      }),
      { seed: fuzzSeed(), numRuns: fuzzRuns() * 2, endOnFailure: true },
    );
  });

  it('answers the no-script form posts with bad fields and bodies without a 5xx', async () => {
    const form = fc.record({
      path: fc.constantFrom(
        'items/about',
        'items/brand',
        'items/logo/upload',
        'items/logo/files/file_x/remove',
      ),
      fields: fc.array(
        fc.tuple(
          nastyString.map((k) => k.slice(0, 100)),
          nastyString.map((v) => v.slice(0, 20_000)),
        ),
        {
          maxLength: 5,
        },
      ),
      contentType: fc.constantFrom(
        'application/x-www-form-urlencoded',
        'multipart/form-data',
        'multipart/form-data; boundary=x',
        'application/json',
        'text/plain',
      ),
    });
    await fc.assert(
      fc.asyncProperty(form, async ({ path, fields, contentType }) => {
        const response = await fetch(`${server.url}/portal/${world.intakeId}/${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': contentType },
          body: new URLSearchParams(fields).toString(),
          signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
        });
        await response.arrayBuffer();
        count(response.status);
        expect(response.status, `${path} ${contentType}`).toBeLessThan(500);
      }),
      { seed: fuzzSeed(), numRuns: fuzzRuns() * 2, endOnFailure: true },
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
