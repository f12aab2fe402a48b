/**
 * What a structured item's JSON Schema, and a value checked against it, may cost.
 *
 * Why: the schema comes from an API caller and the value from the portal's anonymous client, and
 * JSON Schema validation has no built-in bound. A chain of `anyOf` through `$ref`s is tiny to write
 * and exponential to check; `uniqueItems` compares every pair of objects; a deep value or schema
 * exhausts the stack. The limits are checked when the schema is defined (so the caller hears what to
 * change) and the value is measured before validation (the validation budget), so that the work of
 * one check is bounded by (expanded subschemas × value nodes).
 */

/** The schema's JSON text, in characters. */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** Nesting of the schema's JSON (objects and arrays). */
export const MAX_SCHEMA_DEPTH = 32;
/** Subschemas once every local `$ref` is followed (what a check of one value location may visit). */
export const MAX_EXPANDED_NODES = 2_000;
/** Branches of one `anyOf`, `oneOf` or `allOf`. */
export const MAX_COMBINATOR_WIDTH = 20;
/** `uniqueItems` over anything but scalars compares every pair: the array must be bounded by this. */
export const MAX_UNIQUE_ITEMS = 1_000;
/** A value's nesting (objects and arrays). */
export const MAX_VALUE_DEPTH = 32;
/** A value's objects, arrays and scalars together. */
export const MAX_VALUE_NODES = 10_000;

const COMBINATORS = ['anyOf', 'oneOf', 'allOf'] as const;
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

type Json = unknown;

function isObject(node: Json): node is Record<string, Json> {
  return typeof node === 'object' && node !== null && !Array.isArray(node);
}

function childrenOf(node: Json): Json[] {
  if (Array.isArray(node)) return node;
  if (isObject(node)) return Object.values(node);
  return [];
}

/** Depth of a JSON value, counted without recursion; stops as soon as it passes `limit`. */
export function depthExceeds(root: Json, limit: number): boolean {
  const stack: Array<[Json, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [Json, number];
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limit) return true;
    for (const child of childrenOf(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Why the value may not be checked (too deep, too many nodes), or undefined. */
export function valueSizeProblem(value: Json): string | undefined {
  const stack: Array<[Json, number]> = [[value, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [Json, number];
    if (++nodes > MAX_VALUE_NODES) return `the value has more than ${MAX_VALUE_NODES} entries`;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > MAX_VALUE_DEPTH) return `the value is nested deeper than ${MAX_VALUE_DEPTH} levels`;
    for (const child of childrenOf(node)) stack.push([child, depth + 1]);
  }
  return undefined;
}

/** The node a local reference (`#`, `#/$defs/x`, `#/definitions/x`…) points at, if any. */
function resolveLocal(root: Json, ref: string): Json {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: Json = root;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) node = node[Number(part)];
    else if (isObject(node)) node = node[part];
    else return undefined;
  }
  return node;
}

class Refused extends Error {}

/**
 * Subschemas counted with every local `$ref` followed, memoized per node so a doubling chain is
 * measured in linear time. A `$ref` back into its own expansion (a recursive schema) is refused:
 * its cost depends on the value, not on the schema.
 */
function expandedSize(root: Json): number {
  const sizes = new Map<Json, number>();
  const open = new Set<Json>();
  const measure = (node: Json): number => {
    if (typeof node !== 'object' || node === null) return 0;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    if (open.has(node)) throw new Refused('recursive $ref chains are not supported');
    open.add(node);
    let size = 1;
    for (const child of childrenOf(node)) size = Math.min(size + measure(child), MAX_EXPANDED_NODES + 1);
    if (isObject(node) && typeof node.$ref === 'string') {
      const target = resolveLocal(root, node.$ref);
      size = Math.min(size + measure(target), MAX_EXPANDED_NODES + 1);
    }
    open.delete(node);
    sizes.set(node, size);
    return size;
  };
  return measure(root);
}

/**
 * Subschemas once every local `$ref` is followed, at most MAX_EXPANDED_NODES + 1 (a recursive
 * schema counts as that too): the schema's factor in what one check of a value may cost.
 */
export function expandedSubschemas(schema: Record<string, unknown>): number {
  try {
    return Math.min(expandedSize(schema), MAX_EXPANDED_NODES + 1);
  } catch (error) {
    if (error instanceof Refused) return MAX_EXPANDED_NODES + 1;
    throw error;
  }
}

/** A value's objects, arrays and scalars together, counting stops past `limit`. */
export function valueNodes(value: Json, limit = MAX_VALUE_NODES): number {
  const stack: Json[] = [value];
  let nodes = 0;
  while (stack.length > 0 && nodes <= limit) {
    const node = stack.pop();
    nodes++;
    if (typeof node === 'object' && node !== null) stack.push(...childrenOf(node));
  }
  return nodes;
}

/** Per-keyword limits, checked on every object of the schema. */
function keywordProblem(node: Record<string, Json>): string | undefined {
  for (const name of COMBINATORS) {
    const branches = node[name];
    if (Array.isArray(branches) && branches.length > MAX_COMBINATOR_WIDTH) {
      return `${name} has ${branches.length} branches; at most ${MAX_COMBINATOR_WIDTH}`;
    }
  }
  if (node.uniqueItems === true) {
    const items = node.items;
    const scalarItems = isObject(items) && typeof items.type === 'string' && SCALAR_TYPES.has(items.type);
    const max = typeof node.maxItems === 'number' ? node.maxItems : Infinity;
    if (!scalarItems && max > MAX_UNIQUE_ITEMS) {
      return `uniqueItems over objects or arrays needs maxItems of at most ${MAX_UNIQUE_ITEMS}`;
    }
  }
  return undefined;
}

/** Why the schema is too costly to accept, or undefined. */
export function schemaCostProblem(schema: Record<string, unknown>): string | undefined {
  if (depthExceeds(schema, MAX_SCHEMA_DEPTH))
    return `the schema is nested deeper than ${MAX_SCHEMA_DEPTH} levels`;
  if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
    return `the schema is larger than ${MAX_SCHEMA_CHARS} characters`;
  }
  const stack: Json[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (isObject(node)) {
      const problem = keywordProblem(node);
      if (problem) return problem;
    }
    stack.push(...childrenOf(node));
  }
  try {
    if (expandedSize(schema) > MAX_EXPANDED_NODES) {
      return `the schema expands to more than ${MAX_EXPANDED_NODES} subschemas once its $refs are followed`;
    }
  } catch (error) {
    if (error instanceof Refused) return error.message;
    throw error;
  }
  return undefined;
}
