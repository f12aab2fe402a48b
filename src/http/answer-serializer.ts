import type { FastifySerializerCompiler } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';

/**
 * The serialiser of the answers agents read most (the kept reads: the account, the list, an intake, its
 * status). The default one parses every answer with its zod response schema and then stringifies the
 * result: about a tenth of a cold intake read's CPU went to the two. This one is built once per
 * schema: a copy of the answer that takes, in the schema's order, exactly the fields the schema names
 * (so nothing it does not name goes out, as with the parse), checking each value's kind on the way (a
 * string is a string, an enum's value is one of its values, a required field is there), then
 * `JSON.stringify` of that copy. The bytes are the parse's for every answer the parse accepts.
 *
 * What it does not check is a refinement of a kind (a string's format or length, an integer): those
 * answers are built by the service's own typed mappers. An answer whose shape or kinds do not fit goes
 * through the default serialiser, which rejects it as before. A schema with a part the copy does not
 * know (a transform, a default, a lazy or a date, a union of objects) keeps the default serialiser.
 */
export const answerSerializerCompiler: FastifySerializerCompiler<unknown> = (route) => {
  const byParse = serializerCompiler(route as Parameters<typeof serializerCompiler>[0]);
  const copy = isZodSchema(route.schema) ? copierOf(route.schema) : undefined;
  if (!copy) return byParse;
  servedByCopy.add(`${route.method} ${route.url} ${route.httpStatus ?? ''}`);
  return (data: unknown) => {
    let copied: unknown;
    try {
      copied = copy(data);
    } catch (error) {
      if (error === MISFIT) return byParse(data);
      throw error;
    }
    return JSON.stringify(copied);
  };
};

/** The responses given a copier, as `METHOD url status`: the bytes are the same either way, so only this tells. */
const servedByCopy = new Set<string>();

/** Whether this process built a copier for the route's response (`GET /v1/account 200`), for tests. */
export function isServedByCopy(method: string, url: string, httpStatus: string): boolean {
  return servedByCopy.has(`${method} ${url} ${httpStatus}`);
}

/** A zod schema (the parse also takes one wrapped as `{ properties }`: left to it). */
function isZodSchema(schema: unknown): schema is z.core.$ZodType {
  return typeof schema === 'object' && schema !== null && '_zod' in schema;
}

/** Thrown (and caught above) where a value does not fit its schema: no stack, nothing allocated. */
const MISFIT = Object.freeze({ misfit: true });

function misfit(): never {
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- a sentinel, caught by identity above
  throw MISFIT;
}

/** Copies a value as the schema's parse would give it, or throws MISFIT. */
type Copier = (value: unknown) => unknown;

/** The copier of a schema, or undefined where a part of it is not one the copy knows. */
export function copierOf(schema: z.core.$ZodType): Copier | undefined {
  // Every schema zod makes is one of $ZodTypes, whose definitions the switch tells apart by type.
  const def = (schema as z.core.$ZodTypes)._zod.def;
  // A coercing schema changes the value it is given: left to the parse.
  if ('coerce' in def && def.coerce) return undefined;
  switch (def.type) {
    case 'string':
      return (v) => (typeof v === 'string' ? v : misfit());
    case 'number':
      return (v) => (typeof v === 'number' && Number.isFinite(v) ? v : misfit());
    case 'boolean':
      return (v) => (typeof v === 'boolean' ? v : misfit());
    case 'null':
      return (v) => (v === null ? v : misfit());
    case 'unknown':
    case 'any':
      return (v) => v;
    case 'literal': {
      const values = new Set<unknown>(def.values);
      return (v) => (values.has(v) ? v : misfit());
    }
    case 'enum': {
      const values = new Set<unknown>(Object.values(def.entries));
      return (v) => (values.has(v) ? v : misfit());
    }
    case 'nullable': {
      const inner = copierOf(def.innerType);
      return inner && ((v) => (v === null ? null : inner(v)));
    }
    case 'optional': {
      const inner = copierOf(def.innerType);
      return inner && ((v) => (v === undefined ? undefined : inner(v)));
    }
    case 'array': {
      const element = copierOf(def.element);
      return element && ((v) => (Array.isArray(v) ? v.map((e) => element(e)) : misfit()));
    }
    case 'object':
      return objectCopier(def);
    case 'record':
      return recordCopier(def);
    case 'union':
      return unionCopier(def);
    default:
      return undefined;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * An object: its named fields in the schema's order. A field it does not name is left out, or, where
 * the schema is strict, makes the answer a misfit. A field may be absent where zod says its schema may
 * be (optional); an absent field is absent from the copy, as from the parse.
 */
function objectCopier(def: z.core.$ZodObjectDef): Copier | undefined {
  const strict = def.catchall?._zod.def.type === 'never';
  if (def.catchall && !strict) return undefined;
  const fields: { key: string; copy: Copier; mayBeAbsent: boolean }[] = [];
  for (const [key, schema] of Object.entries(def.shape)) {
    const copy = copierOf(schema);
    if (!copy || key === '__proto__') return undefined;
    fields.push({ key, copy, mayBeAbsent: schema._zod.optin === 'optional' });
  }
  const named = new Set(fields.map((field) => field.key));
  return (v) => {
    if (!isPlainObject(v)) return misfit();
    if (strict) for (const key in v) if (!named.has(key)) return misfit();
    const out: Record<string, unknown> = {};
    for (const { key, copy, mayBeAbsent } of fields) {
      if (key in v) out[key] = copy(v[key]);
      else if (!mayBeAbsent) return misfit();
    }
    return out;
  };
}

/** A record of JSON values (a structured item's JSON Schema): given as it is. */
function recordCopier(def: z.core.$ZodRecordDef): Copier | undefined {
  const valueType = def.valueType._zod.def.type;
  if (def.keyType._zod.def.type !== 'string' || (valueType !== 'unknown' && valueType !== 'any'))
    return undefined;
  return (v) => (isPlainObject(v) ? v : misfit());
}

/**
 * A union of values without fields (a string, a number, a list of strings): the first option the value
 * fits, as the parse takes it. A union with an object among its options is left to the parse, which
 * would strip each option's fields its own way.
 */
function unionCopier(def: z.core.$ZodUnionDef): Copier | undefined {
  const options: Copier[] = [];
  for (const option of def.options) {
    const copy = isFieldless(option) ? copierOf(option) : undefined;
    if (!copy) return undefined;
    options.push(copy);
  }
  return (v) => {
    for (const option of options) {
      try {
        return option(v);
      } catch (error) {
        if (error !== MISFIT) throw error;
      }
    }
    return misfit();
  };
}

function isFieldless(schema: z.core.$ZodType): boolean {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  if (def.type === 'array') return isFieldless(def.element);
  if (def.type === 'nullable' || def.type === 'optional') return isFieldless(def.innerType);
  return ['string', 'number', 'boolean', 'null', 'literal', 'enum'].includes(def.type);
}
