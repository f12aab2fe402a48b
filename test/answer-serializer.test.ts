import { serializerCompiler } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { answerSerializerCompiler, copierOf, isServedByCopy } from '../src/http/answer-serializer.js';
import { Account } from '../src/modules/accounts/accounts.schemas.js';
import { Intake, IntakeList, IntakeStatusObject } from '../src/modules/intakes/intakes.schemas.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The kept reads' serialiser (src/http/answer-serializer.ts): a copy built from the response schema, in
 * place of a parse of it. Held against the parse itself, `JSON.stringify(schema.parse(data))`: the same
 * bytes for every answer the parse accepts, and a refusal for every answer it refuses.
 */

const route = { method: 'GET', url: '/test', httpStatus: '200' };

function compiled(schema: z.ZodType): (data: unknown) => string {
  return answerSerializerCompiler({ ...route, schema });
}

function byParse(schema: z.ZodType): (data: unknown) => string {
  return serializerCompiler({ ...route, schema });
}

type Outcome = { bytes: string } | { refused: string };

function outcome(serialize: (data: unknown) => string, data: unknown): Outcome {
  try {
    return { bytes: serialize(data) };
  } catch (error) {
    return { refused: error instanceof Error ? error.constructor.name : String(error) };
  }
}

/** Both serialisers give the same bytes, or both refuse with the same error. */
function expectAlike(schema: z.ZodType, data: unknown, what: string): void {
  const expected = outcome(byParse(schema), data);
  expect(outcome(compiled(schema), data), what).toEqual(expected);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every place in a JSON value: a path of keys and indexes, the root first. */
function placesOf(value: Json, path: (string | number)[] = []): (string | number)[][] {
  const places = [path];
  if (Array.isArray(value)) value.forEach((v, i) => places.push(...placesOf(v, [...path, i])));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) places.push(...placesOf(v, [...path, k]));
  return places;
}

/** A copy of `value` with the value at `path` passed through `change` (undefined: removed). */
function changedAt(value: Json, path: (string | number)[], change: (v: Json) => Json | undefined): Json {
  const copy = structuredClone(value);
  if (path.length === 0) return change(copy) ?? null;
  let parent: Json = copy;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[step] as Json;
  const last = path[path.length - 1] as string | number;
  const container = parent as Record<string | number, Json>;
  const next = change(container[last] as Json);
  if (next !== undefined) container[last] = next;
  else if (Array.isArray(container)) container.splice(Number(last), 1);
  else delete container[last];
  return copy;
}

/** A value of another kind than `v`, as a wrong answer would carry. */
function otherKind(v: Json): Json {
  if (typeof v === 'string') return 42;
  if (v === null) return { unexpected: true };
  if (typeof v === 'object') return 'not an object';
  return 'not a ' + typeof v;
}

/**
 * Every one-place change of an answer: a field added to each object, each field removed, each value
 * swapped for one of another kind. Each time both serialisers must agree (the same bytes or a refusal).
 */
function expectAlikeUnderEveryChange(schema: z.ZodType, answer: Json): number {
  let checked = 0;
  expectAlike(schema, answer, 'the answer itself');
  for (const path of placesOf(answer)) {
    const at = path.join('.') || '(root)';
    const value = path.reduce<Json>((v, step) => (v as Record<string | number, Json>)[step] as Json, answer);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      expectAlike(
        schema,
        changedAt(answer, path, (v) => ({ ...(v as object), zz_extra: 'x' })),
        `+field at ${at}`,
      );
      checked++;
    }
    if (path.length > 0) {
      expectAlike(
        schema,
        changedAt(answer, path, () => undefined),
        `removed ${at}`,
      );
      expectAlike(schema, changedAt(answer, path, otherKind), `other kind at ${at}`);
      checked += 2;
    }
  }
  return checked;
}

describe('the kept reads serialiser against the parse', () => {
  const Shapes = z.object({
    name: z.string(),
    count: z.number(),
    on: z.boolean(),
    note: z.string().nullable(),
    maybe: z.string().optional(),
    kind: z.enum(['a', 'b']),
    exactly: z.literal('x'),
    anything: z.unknown(),
    schema: z.record(z.string(), z.unknown()).nullable(),
    value: z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]),
    strict: z.strictObject({ min: z.number().optional() }),
    list: z.array(z.object({ key: z.string(), done: z.boolean().nullable() })),
  });
  const sample: Json = {
    list: [
      { done: null, key: 'b', extra: 1 },
      { key: 'a', done: true },
    ],
    name: 'N',
    count: 2,
    on: false,
    note: null,
    kind: 'b',
    exactly: 'x',
    anything: { deep: [1, { two: 2 }] },
    schema: { type: 'object', properties: { a: { type: 'string' } } },
    value: ['x', 'y'],
    strict: { min: 3 },
    hidden: 'never sent',
  };

  it("takes the schema's fields in the schema's order, and nothing else", () => {
    const bytes = compiled(Shapes)(sample);
    expect(bytes).toBe(JSON.stringify(Shapes.parse(sample)));
    expect(Object.keys(JSON.parse(bytes) as object)).toEqual(
      Object.keys(Shapes.shape).filter((k) => k !== 'maybe'),
    );
    expect(bytes).not.toContain('hidden');
    expect(bytes).not.toContain('extra');
  });

  it('agrees with the parse under every one-place change of an answer', () => {
    expect(expectAlikeUnderEveryChange(Shapes, sample)).toBeGreaterThan(40);
    for (const value of ['s', 3, true, ['a'], [1], { a: 1 }, null])
      expectAlike(Shapes, { ...(sample as object), value }, `union value ${JSON.stringify(value)}`);
    expectAlike(Shapes, { ...(sample as object), count: Number.NaN }, 'NaN');
    expectAlike(Shapes, { ...(sample as object), maybe: undefined }, 'an optional field given as undefined');
    expectAlike(Shapes, { ...(sample as object), note: undefined }, 'a nullable field given as undefined');
  });

  it('leaves a schema it does not know to the parse', () => {
    const Transformed = z.object({ name: z.string().transform((s) => s.toUpperCase()) });
    expect(copierOf(Transformed)).toBeUndefined();
    expect(compiled(Transformed)({ name: 'abc' })).toBe('{"name":"ABC"}');
    const Defaulted = z.object({ n: z.number().default(7) });
    expect(copierOf(Defaulted)).toBeUndefined();
    expect(compiled(Defaulted)({})).toBe('{"n":7}');
    const ObjectUnion = z.object({ v: z.union([z.object({ a: z.string() }), z.object({ b: z.string() })]) });
    expect(copierOf(ObjectUnion)).toBeUndefined();
    expect(compiled(ObjectUnion)({ v: { b: 'x', c: 1 } })).toBe('{"v":{"b":"x"}}');
    expect(copierOf(z.object({ n: z.coerce.number() }))).toBeUndefined();
    const wrapped = answerSerializerCompiler({
      ...route,
      schema: { properties: z.object({ a: z.string() }) },
    });
    expect(wrapped({ a: 'x', b: 1 })).toBe('{"a":"x"}');
  });

  it("knows every part of the kept reads' schemas", () => {
    for (const schema of [Account, IntakeList, Intake, IntakeStatusObject])
      expect(copierOf(schema)).toBeDefined();
  });
});

describe.each(DATABASES)('the kept reads as served (%s)', (database) => {
  let server: TestServer;
  let api: Client;
  let intakeId: string;

  beforeAll(async () => {
    server = await startTestServer(database);
    api = client(server.url, (await server.createAccount({ plan: 'agency' })).test_key);
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Every part of an answer',
      client: { email: 'dana@example.com', name: 'Dana', language: 'en', timezone: 'Europe/Berlin' },
      due_date: '2099-12-31',
      client_brief: 'Logo, words, facts.',
      also_notify: [{ email: 'ana@example.com', name: 'Ana' }],
      items: [
        {
          key: 'logo',
          label: 'Logo',
          type: 'image',
          constraints: { formats: ['svg', 'png'], min_width: 1000, transparent_background: true },
        },
        {
          key: 'about',
          label: 'About',
          type: 'longtext',
          help: 'Two paragraphs.',
          constraints: { min_chars: 5 },
        },
        {
          key: 'brand',
          label: 'Brand facts',
          type: 'structured',
          schema: { type: 'object', required: ['company'], properties: { company: { type: 'string' } } },
        },
        {
          key: 'style',
          label: 'Style',
          type: 'select',
          options: [
            { value: 'calm', label: 'Calm' },
            { value: 'bold', label: 'Bold' },
          ],
        },
        { key: 'bold_why', label: 'Why bold?', type: 'text', show_if: { item_key: 'style', equals: 'bold' } },
        {
          key: 'plan',
          label: 'One go or phases?',
          type: 'select',
          assignee: 'owner',
          options: [
            { value: 'one', label: 'One go' },
            { value: 'phases', label: 'Phases' },
          ],
          proposed: { value: 'phases', rationale: 'Lower risk.' },
        },
      ],
    });
    expect(created.status, created.text).toBe(201);
    intakeId = created.body.intake_id;
    const portal = client(server.url);
    for (const [key, value] of [
      ['about', 'We bake bread.'],
      ['style', 'bold'],
    ] as const) {
      const saved = await portal.call('PUT', `/portal/api/${intakeId}/items/${key}`, { body: { value } });
      expect(saved.status, saved.text).toBe(200);
      const submitted = await portal.post(`/portal/api/${intakeId}/items/${key}/submit`);
      expect(submitted.status, submitted.text).toBe(200);
    }
    const revision = await api.post(`/v1/intakes/${intakeId}/revision`, {
      item_key: 'about',
      note: 'A little longer, please.',
    });
    expect(revision.status, revision.text).toBe(200);
    const approval = await api.post(`/v1/intakes/${intakeId}/items/style/approve`);
    expect(approval.status, approval.text).toBe(200);
  });

  afterAll(async () => {
    await server?.stop();
  });

  const reads: [string, z.ZodType, () => string][] = [
    ['the account', Account, () => '/v1/account'],
    ['the list', IntakeList, () => '/v1/intakes'],
    ['an intake', Intake, () => `/v1/intakes/${intakeId}`],
    ['its status', IntakeStatusObject, () => `/v1/intakes/${intakeId}/status`],
  ];

  it.each(reads)(
    '%s: the bytes the parse gives, and the same under every change',
    async (_, schema, path) => {
      const answer = await api.get(path());
      expect(answer.status, answer.text).toBe(200);
      const body = JSON.parse(answer.text) as Json;
      expect(answer.text).toBe(JSON.stringify(schema.parse(body)));
      expect(expectAlikeUnderEveryChange(schema, body)).toBeGreaterThan(10);
    },
  );

  it('serves the four kept reads through a copier, and a read that is not kept through the parse', async () => {
    for (const url of ['/v1/account', '/v1/intakes', '/v1/intakes/:id', '/v1/intakes/:id/status'])
      expect(isServedByCopy('GET', url, '200'), url).toBe(true);
    const results = await api.get(`/v1/intakes/${intakeId}/results`);
    expect(results.status, results.text).toBe(200);
    expect(isServedByCopy('GET', '/v1/intakes/:id/results', '200')).toBe(false);
  });
});
