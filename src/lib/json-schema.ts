import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import addFormatsPlugin from 'ajv-formats';
import type { SchemaCompiler } from '../domain/items.js';
import type { SchemaValidator } from '../domain/values.js';
import { schemaCostProblem, valueSizeProblem } from '../domain/schema-limits.js';
import { compileLinearRegExp } from '../domain/pattern.js';

/**
 * Patterns in a caller's schema (`pattern`, `patternProperties`, `propertyNames`) run on RE2, whose
 * matching time is linear in the text: the backtracking RegExp would let one anonymous submit of a
 * crafted value hold the event loop for hours (`^(a+)+$` against 40 `a` and a `!`). The translation
 * is text patterns' own (domain/pattern.ts): what RE2 cannot run in linear time (backreferences,
 * lookaround) is refused when the schema is defined.
 */
const linearRegExp = Object.assign(
  (pattern: string) => {
    const compiled = compileLinearRegExp(pattern);
    // Ajv shares compiled patterns by toString(): it must differ per pattern.
    return { test: (text: string) => compiled.test(text), toString: () => `re2:${pattern}` };
  },
  { code: 'linearRegExp' },
) satisfies RegExpEngine;

/** JSON Schema (draft 2020-12 keywords Ajv supports by default) for structured items, compiled once per schema. */
const ajv = new Ajv({
  allErrors: true,
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
  code: { regExp: linearRegExp },
});
// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsPlugin as unknown as (instance: Ajv) => Ajv;
addFormats(ajv);

/**
 * Compiled schemas, least recently used first. Bounded: each entry holds generated code, and Ajv
 * keeps its own entry per schema object until it is removed, so an eviction removes both.
 */
export const SCHEMA_CACHE_ENTRIES = 200;
const compiled = new Map<string, { schema: Record<string, unknown>; validate: ValidateFunction }>();

/** How many compiled schemas are held (tests and metrics). */
export function cachedSchemaCount(): number {
  return compiled.size;
}

class SchemaRefused extends Error {}

function compile(schema: Record<string, unknown>): ValidateFunction {
  const text = JSON.stringify(schema);
  const hit = compiled.get(text);
  if (hit) {
    compiled.delete(text);
    compiled.set(text, hit);
    return hit.validate;
  }
  // The cost is checked before Ajv sees the schema: compiling a huge one blocks the loop as well.
  const problem = schemaCostProblem(schema);
  if (problem) throw new SchemaRefused(problem);
  const own = structuredClone(schema);
  const validate = ajv.compile(own);
  compiled.set(text, { schema: own, validate });
  while (compiled.size > SCHEMA_CACHE_ENTRIES) {
    const [oldestKey, oldest] = compiled.entries().next().value as [
      string,
      { schema: Record<string, unknown> },
    ];
    compiled.delete(oldestKey);
    ajv.removeSchema(oldest.schema);
  }
  return validate;
}

/** An error as Ajv reports it, reduced to what crosses a thread (messages and field errors use it). */
export interface SchemaError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

/** Errors kept per check: with allErrors a crafted value can produce millions of them. */
export const MAX_REPORTED_ERRORS = 100;

/** The outcome of checking a value against a schema, wherever it ran (inline or in a worker). */
export type SchemaCheck =
  | { kind: 'valid' }
  /** The value is too deep or has too many nodes to be checked at all. */
  | { kind: 'too_large'; message: string }
  /** The schema is refused (a stored schema older than its limits). */
  | { kind: 'schema_refused'; message: string }
  | { kind: 'invalid'; errors: SchemaError[] }
  /** The check did not finish within VALIDATION_TIME_BUDGET_MS (or its worker failed). */
  | { kind: 'unchecked'; message: string };

function describe(errors: SchemaError[]): string {
  return errors
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(root)'} ${e.message}`.trim())
    .join('; ');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : 'invalid schema';
}

export const compileJsonSchema: SchemaCompiler = (schema) => {
  try {
    compile(schema);
    return undefined;
  } catch (error) {
    return messageOf(error);
  }
};

/**
 * Checks a value on this thread. The value is measured before it is validated: its depth and node
 * count are bounded, so what a schema costs per value is bounded too (see lib/schema-budget.ts for
 * the time budget on top). A schema stored before its limits existed and now refused refuses every
 * value, with the reason.
 */
export function checkJsonSchema(schema: Record<string, unknown>, value: unknown): SchemaCheck {
  const tooLarge = valueSizeProblem(value);
  if (tooLarge) return { kind: 'too_large', message: tooLarge };
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (error) {
    return { kind: 'schema_refused', message: messageOf(error) };
  }
  if (validate(value)) return { kind: 'valid' };
  return {
    kind: 'invalid',
    errors: (validate.errors ?? []).slice(0, MAX_REPORTED_ERRORS).map((e: ErrorObject) => ({
      instancePath: e.instancePath,
      keyword: e.keyword,
      params: e.params as Record<string, unknown>,
      message: e.message ?? 'is invalid',
    })),
  };
}

/** The check as one line of text (undefined: valid), as the submission checks report it. */
export function schemaCheckMessage(check: SchemaCheck): string | undefined {
  switch (check.kind) {
    case 'valid':
      return undefined;
    case 'too_large':
    case 'unchecked':
      return check.message;
    case 'schema_refused':
      return `the item's schema cannot be checked: ${check.message}`;
    case 'invalid':
      return describe(check.errors);
  }
}

/** One problem with a value, located for display next to its field (the portal's structured forms). */
export interface SchemaIssue {
  /** Dotted path of the field (`address.street`); '' for the value as a whole. */
  path: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

/** The check as problems per field (empty: valid). */
export function schemaCheckIssues(check: SchemaCheck): SchemaIssue[] {
  switch (check.kind) {
    case 'valid':
      return [];
    case 'too_large':
      return [{ path: '', keyword: 'size', params: {}, message: check.message }];
    case 'unchecked':
      return [{ path: '', keyword: 'time', params: {}, message: check.message }];
    case 'schema_refused':
      return [{ path: '', keyword: 'schema', params: {}, message: check.message }];
    case 'invalid':
      return check.errors.map((e) => {
        const parts = e.instancePath.split('/').filter(Boolean);
        const missing: unknown = e.params.missingProperty;
        if (e.keyword === 'required' && typeof missing === 'string') parts.push(missing);
        return {
          path: parts.map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~')).join('.'),
          keyword: e.keyword,
          params: e.params,
          message: e.message,
        };
      });
  }
}

/** Checks on this thread, whatever the cost: for values already known to be cheap, and tests. */
export const validateJsonSchema: SchemaValidator = (schema, value) =>
  schemaCheckMessage(checkJsonSchema(schema, value));

/** Checks on this thread, whatever the cost: for values already known to be cheap, and tests. */
export function jsonSchemaIssues(schema: Record<string, unknown>, value: unknown): SchemaIssue[] {
  return schemaCheckIssues(checkJsonSchema(schema, value));
}
