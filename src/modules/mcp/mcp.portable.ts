/*
 * Tool schemas every agent host can take as they are. Hosts hand a tool's schema to their model
 * provider, and the providers read narrower dialects than JSON Schema: OpenAI's function calling
 * (strict mode above all), Gemini's function declarations, Anthropic's tool input schemas. What all of
 * them read is a common subset: one `type` per schema, `anyOf` for alternatives (a nullable field
 * included), `enum` for fixed values, no references, and a handful of constraint keywords. A schema
 * outside that subset draws warnings from some hosts and is refused (or silently cut down) by others.
 *
 * `portableSchema` derives that form from the JSON Schema zod gives, without changing which values it
 * accepts; `portabilityProblems` is the check, one message per problem.
 */

export type JsonSchema = { [keyword: string]: unknown };

/** Keywords a portable schema may use: the subset the hosts above share. Anything else is a problem. */
export const PORTABLE_KEYWORDS: readonly string[] = [
  // structure
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'enum',
  // constraints
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  // annotations
  'title',
  'description',
  'default',
  'examples',
];

/** String formats the hosts know; another format would be ignored at best, refused at worst. */
export const PORTABLE_FORMATS: readonly string[] = ['date-time', 'date', 'time', 'email', 'uri', 'uuid'];

const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];
const ANNOTATIONS = ['title', 'description', 'default', 'examples'];

/** The keywords that apply to values of one type: the rest of a multi-type schema's keywords are dropped from its branch. */
const KEYWORDS_OF_TYPE: Record<string, readonly string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  boolean: [],
  null: [],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  object: [
    'properties',
    'required',
    'additionalProperties',
    'propertyNames',
    'minProperties',
    'maxProperties',
  ],
};

/** Any JSON value, each kind a typed branch: what `{}` means, said in a form every host reads. */
const ANY_JSON: readonly JsonSchema[] = [
  { type: 'string' },
  { type: 'number' },
  { type: 'boolean' },
  { type: 'object' },
  { type: 'array' },
  { type: 'null' },
];

function isSchemaObject(node: unknown): node is JsonSchema {
  return typeof node === 'object' && node !== null && !Array.isArray(node);
}

/** Says nothing about its value: `{}`, `true`, or annotations alone. */
function isUnconstrained(node: unknown): boolean {
  if (node === true) return true;
  return isSchemaObject(node) && Object.keys(node).every((keyword) => ANNOTATIONS.includes(keyword));
}

function annotationsOf(node: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(node).filter(([keyword]) => ANNOTATIONS.includes(keyword)));
}

/**
 * The same schema in the portable subset; accepts exactly the values the original accepts.
 * - `type: ["string", "null"]` becomes `anyOf: [{type: "string", …its constraints}, {type: "null"}]`,
 *   annotations (description, default) staying on the field itself;
 * - `const: x` becomes `enum: [x]`;
 * - an integer's `exclusiveMinimum: n` becomes `minimum: n + 1` (and the same for the maximum);
 * - `{}` as `items` or `additionalProperties` is left out (JSON Schema reads a missing one as "any
 *   value"); elsewhere it becomes an `anyOf` of every JSON type, keeping its description;
 * - `propertyNames: {type: "string"}` (every JSON key is a string) and `$schema`/`$id` are left out:
 *   what remains reads the same in draft-07 and 2020-12, so it needs no dialect named;
 * - an `anyOf` member that is only an `anyOf` is spliced into its parent.
 * Keywords outside the subset that have no exact rewriting (`oneOf`, `$ref`…) are kept: the check
 * reports them rather than the derivation hiding them.
 */
export function portableSchema(schema: JsonSchema): JsonSchema {
  return portableNode(schema);
}

function portableNode(node: JsonSchema): JsonSchema {
  if (isUnconstrained(node)) return { ...node, anyOf: ANY_JSON.map((branch) => ({ ...branch })) };
  const out: JsonSchema = {};
  for (const [keyword, value] of Object.entries(node)) {
    switch (keyword) {
      case '$schema':
      case '$id':
        break;
      case 'const':
        out.enum = [value];
        break;
      case 'propertyNames':
        if (!(isSchemaObject(value) && Object.keys(value).length === 1 && value.type === 'string')) {
          out.propertyNames = portableChild(value);
        }
        break;
      case 'items':
      case 'additionalProperties':
        if (isUnconstrained(value) && !(isSchemaObject(value) && value.description !== undefined)) break;
        out[keyword] = portableChild(value);
        break;
      case 'properties':
        out.properties = isSchemaObject(value)
          ? Object.fromEntries(Object.entries(value).map(([name, field]) => [name, portableChild(field)]))
          : value;
        break;
      case 'anyOf':
      case 'oneOf':
      case 'allOf':
        out[keyword] = Array.isArray(value) ? value.map(portableChild) : value;
        break;
      case 'not':
        out.not = portableChild(value);
        break;
      default:
        out[keyword] = value;
    }
  }
  if (out.type === 'integer') exclusiveBoundsToInclusive(out);
  const split = Array.isArray(out.type) ? splitTypes(out) : out;
  if (Array.isArray(split.anyOf)) split.anyOf = spliceNestedAnyOf(split.anyOf as unknown[]);
  return split;
}

function portableChild(value: unknown): unknown {
  return isSchemaObject(value) || value === true ? portableNode(value === true ? {} : value) : value;
}

/** Integers have no value strictly between n and n + 1, so an exclusive bound is an inclusive one. */
function exclusiveBoundsToInclusive(node: JsonSchema): void {
  const { exclusiveMinimum, exclusiveMaximum } = node;
  if (typeof exclusiveMinimum === 'number') {
    const bound = Math.floor(exclusiveMinimum) + 1;
    node.minimum = typeof node.minimum === 'number' ? Math.max(node.minimum, bound) : bound;
    delete node.exclusiveMinimum;
  }
  if (typeof exclusiveMaximum === 'number') {
    const bound = Math.ceil(exclusiveMaximum) - 1;
    node.maximum = typeof node.maximum === 'number' ? Math.min(node.maximum, bound) : bound;
    delete node.exclusiveMaximum;
  }
}

/** `type: [a, b]` as `anyOf: [{type: a, …a's keywords}, {type: b, …b's}]`, annotations kept outside. */
function splitTypes(node: JsonSchema): JsonSchema {
  const types = (node.type as unknown[]).filter((type): type is string => typeof type === 'string');
  if (node.anyOf !== undefined) return node; // both at once: left for the check to report
  const outer = annotationsOf(node);
  const branches = types.map((type) => {
    const branch: JsonSchema = { type };
    for (const keyword of KEYWORDS_OF_TYPE[type] ?? []) {
      if (node[keyword] !== undefined) branch[keyword] = node[keyword];
    }
    if (Array.isArray(node.enum)) {
      // Each branch keeps its own values; a type none of the values has was never allowed.
      const values = node.enum.filter((value) => jsonTypeOf(value, type));
      if (values.length === 0) return undefined;
      if (type !== 'null') branch.enum = values;
    }
    if (type === 'integer') exclusiveBoundsToInclusive(branch);
    return branch;
  });
  const kept = branches.filter((branch) => branch !== undefined);
  const [only] = kept;
  return kept.length === 1 && only ? { ...outer, ...only } : { ...outer, anyOf: kept };
}

function jsonTypeOf(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isSchemaObject(value);
    default:
      return typeof value === type;
  }
}

function spliceNestedAnyOf(members: unknown[]): unknown[] {
  return members.flatMap((member) =>
    isSchemaObject(member) && Object.keys(member).length === 1 && Array.isArray(member.anyOf)
      ? (member.anyOf as unknown[])
      : [member],
  );
}

/**
 * What keeps a tool schema from being portable, one message per problem with where it is (a JSON
 * pointer). A tool schema's root is an object (MCP asks for one; OpenAI refuses a root `anyOf`). Every
 * schema states what it holds (`type`, `anyOf` or `enum`); a free-form one (an object without
 * properties, an array without items, an `anyOf` of every type) says in its description what it holds.
 */
export function portabilityProblems(schema: unknown): string[] {
  const problems: string[] = [];
  if (!isSchemaObject(schema) || schema.type !== 'object') {
    problems.push('/: a tool schema must be {"type": "object"} at its root');
  }
  checkNode(schema, '', false, problems);
  return problems;
}

function checkNode(node: unknown, at: string, described: boolean, problems: string[]): void {
  const where = at === '' ? '/' : at;
  if (typeof node === 'boolean') {
    problems.push(`${where}: a boolean schema (${node}); write what it holds instead`);
    return;
  }
  if (!isSchemaObject(node)) {
    problems.push(`${where}: not a schema`);
    return;
  }
  for (const keyword of Object.keys(node)) {
    if (keyword === '$ref') problems.push(`${where}: $ref (hosts that do not follow references see nothing)`);
    else if (!PORTABLE_KEYWORDS.includes(keyword))
      problems.push(`${where}: keyword ${keyword} is not portable`);
  }
  const { type } = node;
  if (Array.isArray(type)) problems.push(`${where}: type is an array (${JSON.stringify(type)}); use anyOf`);
  else if (type !== undefined && !(typeof type === 'string' && JSON_TYPES.includes(type))) {
    problems.push(`${where}: type ${JSON.stringify(type)} is not a JSON type`);
  }
  if (type === undefined && node.anyOf === undefined && node.enum === undefined) {
    problems.push(`${where}: an empty schema (no type, anyOf or enum)`);
  }
  if (typeof node.format === 'string' && !PORTABLE_FORMATS.includes(node.format)) {
    problems.push(`${where}: format ${node.format} is not portable`);
  }
  const hasDescription = typeof node.description === 'string' && node.description.length > 0;
  const freeForm =
    (type === 'object' && node.properties === undefined && node.additionalProperties === undefined) ||
    (type === 'array' && node.items === undefined);
  if (freeForm && !hasDescription && !described) {
    problems.push(`${where}: a free-form ${String(type)} without a description of what it holds`);
  }
  if (isSchemaObject(node.properties)) {
    for (const [name, field] of Object.entries(node.properties)) {
      checkNode(field, `${at}/properties/${name}`, false, problems);
    }
  }
  if (node.items !== undefined) checkNode(node.items, `${at}/items`, false, problems);
  if (node.additionalProperties !== undefined && node.additionalProperties !== false) {
    checkNode(node.additionalProperties, `${at}/additionalProperties`, false, problems);
  }
  if (Array.isArray(node.anyOf)) {
    node.anyOf.forEach((member, index) =>
      checkNode(member, `${at}/anyOf/${index}`, described || hasDescription, problems),
    );
  }
  for (const keyword of ['oneOf', 'allOf']) {
    const members = node[keyword];
    if (Array.isArray(members)) {
      members.forEach((member, index) => checkNode(member, `${at}/${keyword}/${index}`, false, problems));
    }
  }
  for (const keyword of ['definitions', '$defs']) {
    const definitions = node[keyword];
    if (isSchemaObject(definitions)) {
      for (const [name, definition] of Object.entries(definitions)) {
        checkNode(definition, `${at}/${keyword}/${name}`, false, problems);
      }
    }
  }
}
