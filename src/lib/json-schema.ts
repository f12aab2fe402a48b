import { Ajv, type ErrorObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { SchemaCompiler } from '../domain/items.js';
import type { SchemaValidator } from '../domain/values.js';

/** JSON Schema (draft 2020-12 keywords Ajv supports by default) for structured items, compiled once per schema. */
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsPlugin as unknown as (instance: Ajv) => Ajv;
addFormats(ajv);

const compiled = new Map<string, ReturnType<Ajv['compile']>>();

function compile(schema: Record<string, unknown>) {
  const text = JSON.stringify(schema);
  let validate = compiled.get(text);
  if (!validate) {
    validate = ajv.compile(schema);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(text, validate);
  }
  return validate;
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`.trim())
    .join('; ');
}

export const compileJsonSchema: SchemaCompiler = (schema) => {
  try {
    compile(schema);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : 'invalid schema';
  }
};

export const validateJsonSchema: SchemaValidator = (schema, value) => {
  const validate = compile(schema);
  return validate(value) ? undefined : describe(validate.errors);
};

/** One problem with a value, located for display next to its field (the portal's structured forms). */
export interface SchemaIssue {
  /** Dotted path of the field (`address.street`); '' for the value as a whole. */
  path: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

export function jsonSchemaIssues(schema: Record<string, unknown>, value: unknown): SchemaIssue[] {
  const validate = compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const parts = e.instancePath.split('/').filter(Boolean);
    const missing: unknown = (e.params as Record<string, unknown>).missingProperty;
    if (e.keyword === 'required' && typeof missing === 'string') parts.push(missing);
    return {
      path: parts.map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~')).join('.'),
      keyword: e.keyword,
      params: e.params,
      message: e.message ?? 'is invalid',
    };
  });
}
