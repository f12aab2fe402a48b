import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * The OpenAPI document as a contract the tests hold answers to: which operations exist, what each
 * takes, and which status codes and bodies it may answer. Read at run time, so operations added by
 * other modules are covered without editing the tests.
 */

type JsonSchema = Record<string, unknown>;

interface MediaObject {
  schema?: JsonSchema;
}

interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
}

interface OperationObject {
  parameters?: ParameterObject[];
  requestBody?: { content?: Record<string, MediaObject> };
  responses?: Record<string, { content?: Record<string, MediaObject> }>;
  security?: unknown[];
  'x-required-scope'?: string;
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OperationObject>>;
  components?: Record<string, unknown>;
}

export interface Operation {
  method: string;
  /** The OpenAPI path template, e.g. /v1/intakes/{id}. */
  path: string;
  pathParams: string[];
  queryParams: ParameterObject[];
  /** The JSON request body schema, when the operation takes one. */
  bodySchema: JsonSchema | undefined;
  /** Media types the operation documents for its body (JSON, octet-stream…). */
  bodyMediaTypes: string[];
  statuses: Set<number>;
  /** The required scope (from x-required-scope); undefined on public operations. */
  scope: string | undefined;
  raw: OperationObject;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const params = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] ?? ''),
        queryParams: params.filter((param) => param.in === 'query'),
        bodySchema: content['application/json']?.schema,
        bodyMediaTypes: Object.keys(content),
        statuses: new Set(Object.keys(op.responses ?? {}).map(Number)),
        scope: op['x-required-scope'],
        raw: op,
      });
    }
  }
  return out;
}

export const operationName = (op: Pick<Operation, 'method' | 'path'>) => `${op.method} ${op.path}`;

/** Fills a path template, each value percent-encoded (so a "../" stays inside its segment). */
export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeSegment(values[name] ?? 'x'));
}

/** encodeURIComponent, with lone surrogates (which it refuses) sent as U+FFFD, as browsers do. */
export function encodeSegment(value: string): string {
  return encodeURIComponent(value.replace(/[\uD800-\uDFFF]/gu, '\uFFFD'));
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/**
 * Checks answers against the document: the status must be documented for the operation, and a JSON
 * body must match the documented schema of that status.
 */
export class ResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
    addFormats(this.ajv);
  }

  /** A list of problems; empty when the answer is what the document promises. */
  check(op: Operation, status: number, contentType: string | null, body: unknown): string[] {
    const documented = op.raw.responses?.[String(status)];
    if (!documented) {
      return [`${operationName(op)} answered ${status}, which the document does not list`];
    }
    const schema = documented.content?.['application/json']?.schema;
    if (!schema || !contentType?.includes('application/json')) return [];
    const validate = this.validatorFor(`${operationName(op)} ${status}`, schema);
    if (validate(body)) return [];
    const errors = (validate.errors ?? [])
      .slice(0, 3)
      .map((error) => `${error.instancePath || '/'} ${error.message ?? ''}`);
    return [`${operationName(op)} ${status}: body does not match the document: ${errors.join('; ')}`];
  }

  private validatorFor(id: string, schema: JsonSchema): ValidateFunction {
    let validate = this.compiled.get(id);
    if (!validate) {
      // Local $refs (#/components/schemas/…) resolve against this root.
      validate = this.ajv.compile({ ...schema, components: this.doc.components ?? {} });
      this.compiled.set(id, validate);
    }
    return validate;
  }
}

export async function fetchOpenApi(baseUrl: string): Promise<OpenApiDocument> {
  const response = await fetch(`${baseUrl}/v1/openapi.json`);
  if (response.status !== 200) throw new Error(`openapi.json answered ${response.status}`);
  return (await response.json()) as OpenApiDocument;
}
