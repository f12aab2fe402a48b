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
