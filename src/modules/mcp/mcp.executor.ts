import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/secrets.js';

/** Marks an Idempotency-Key the tools derived from a call's arguments (see ToolSpec.derivedIdempotencyKey). */
export const DERIVED_KEY_PREFIX = 'mcp-args-';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** What a summary may say beyond the REST answer itself. */
export interface SummaryContext {
  /** HTTP status of the REST answer: 200 and 201 tell an idempotent replay from a creation. */
  status: number;
  /** The key acts on live data (svc_live_…): emails really reach the client. */
  livemode: boolean;
  args: Readonly<Record<string, unknown>>;
}

/** One agent tool: exactly one REST endpoint, its arguments and its answer. */
export interface ToolSpec<Output extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  /** Written for an agent: when to use it, what happens to the client, what to do next. */
  description: string;
  method: HttpMethod;
  /** The REST path; each `:name` segment is filled from the argument of that name. */
  path: string;
  /** The arguments: path parameters under their REST names plus the route's body (or query) schema. */
  input: z.ZodObject;
  /** Arguments sent as request headers rather than in the body or query: argument → header. */
  headers?: Readonly<Record<string, string>>;
  /**
   * The argument (one of `headers`) carrying an Idempotency-Key: when the caller leaves it out, one is
   * derived from the canonical JSON of the other arguments, so an identical call repeated within the
   * key's 24 hours (a host's retry) returns the first answer instead of acting twice. Keys are kept per
   * API key, so the derived key is the caller's key plus the arguments.
   */
  derivedIdempotencyKey?: string;
  /** The route's success response schema; absent when it answers 204 No Content. */
  output?: Output;
  /** Every hint stated (mcp.annotations.ts): a hint left out means the unsafe reading to a host. */
  annotations: ToolAnnotations &
    Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;
  summarize(result: z.output<Output>, context: SummaryContext): string;
  /**
   * A tool that manages one resource through a few endpoints (manage_recipients): the value of
   * `argument` picks the endpoint (method and path) and is not sent; every call is still one request.
   */
  choose?: {
    argument: string;
    routes: Readonly<Record<string, { method: HttpMethod; path: string }>>;
  };
}

/** Keeps each table entry typed by its own output schema. */
export function defineTool<Output extends z.ZodType>(spec: ToolSpec<Output>): ToolSpec {
  return spec;
}

export interface RestRequest {
  method: HttpMethod;
  /** Path and query string, e.g. /v1/intakes?status=sent */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface RestResponse {
  status: number;
  text: string;
}

/**
 * Sends a request to the service's own REST API as one API key: the key's authentication, scopes,
 * rate limit, audit trail and data world (live or test) apply exactly as to any REST client.
 */
export interface RestCaller {
  readonly livemode: boolean;
  send(request: RestRequest): Promise<RestResponse>;
}

/** The error object of a tool error: REST's {error, message, request_id}, or ours when no request was made. */
export interface ToolErrorBody {
  error: string;
  message: string;
  request_id?: string;
  [extra: string]: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toolError(body: ToolErrorBody): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** A header or query-string value: text as it is, anything else as JSON (true, 20, {…}). */
function wireText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The REST request a tool call stands for, or the reason there is none (no request id then). */
export function restRequestOf(
  tool: ToolSpec,
  args: Record<string, unknown>,
): { request: RestRequest } | { refused: ToolErrorBody } {
  const known = Object.keys(tool.input.shape);
  const unknown = Object.keys(args).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    return {
      refused: {
        error: 'invalid_request',
        message: `Unknown argument${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} for ${tool.name} (check the spelling); it takes: ${known.join(', ')}.`,
      },
    };
  }
  const rest: Record<string, unknown> = { ...args };
  let { method, path: template } = tool;
  if (tool.choose) {
    const { argument, routes } = tool.choose;
    const picked = rest[argument];
    delete rest[argument];
    const route = typeof picked === 'string' && Object.hasOwn(routes, picked) ? routes[picked] : undefined;
    if (!route) {
      return {
        refused: {
          error: 'invalid_request',
          message: `${argument} is required: one of ${Object.keys(routes).join(', ')}.`,
        },
      };
    }
    ({ method, path: template } = route);
  }
  const missing: string[] = [];
  const path = template.replace(/:([a-z_]+)/g, (_segment, name: string) => {
    const value = rest[name];
    delete rest[name];
    if (typeof value !== 'string' || value === '') {
      missing.push(name);
      return '_';
    }
    return encodeURIComponent(value);
  });
  if (missing.length > 0) {
    return {
      refused: {
        error: 'invalid_request',
        message: `${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required: a non-empty string.`,
      },
    };
  }
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(tool.headers ?? {})) {
    const value = rest[name];
    delete rest[name];
    if (value !== undefined && value !== null) headers[header] = wireText(value);
  }
  const present = Object.entries(rest).filter(([, value]) => value !== undefined);
  const derived = tool.derivedIdempotencyKey;
  if (derived !== undefined) {
    const header = tool.headers?.[derived];
    if (header !== undefined && headers[header] === undefined) {
      const canonical = canonicalJson(Object.fromEntries(present.filter(([, value]) => value !== null)));
      headers[header] = `${DERIVED_KEY_PREFIX}${sha256Hex(`${tool.name}\n${canonical}`)}`;
    }
  }
  // GET and DELETE take their arguments in the query; POST and PATCH in a JSON body.
  if (method !== 'POST' && method !== 'PATCH') {
    const query = new URLSearchParams(
      present
        .filter(([, value]) => value !== null)
        .map(([name, value]): [string, string] => [name, wireText(value)]),
    ).toString();
    return { request: { method, path: query ? `${path}?${query}` : path, headers } };
  }
  if (present.length === 0) return { request: { method, path, headers } };
  headers['content-type'] = 'application/json';
  return {
    request: { method, path, headers, body: JSON.stringify(Object.fromEntries(present)) },
  };
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function summaryOf(tool: ToolSpec, body: unknown, context: SummaryContext): string {
  if (!tool.output) return tool.summarize(body, context);
  const parsed = tool.output.safeParse(body);
  // The REST answer is the contract; a summary that cannot read it still names the outcome.
  return parsed.success
    ? tool.summarize(parsed.data, context)
    : `${tool.title}: done (HTTP ${context.status}).`;
}

/**
 * A tool call: one REST request with the caller's key. Success → the REST answer as structured
 * content, a short summary and the same JSON as text (for clients that show only text to the model);
 * a REST error → a tool error carrying the REST error object unchanged.
 */
export async function callTool(
  tool: ToolSpec,
  args: Record<string, unknown>,
  caller: RestCaller,
): Promise<CallToolResult> {
  const built = restRequestOf(tool, args);
  if ('refused' in built) return toolError(built.refused);
  let response: RestResponse;
  try {
    response = await caller.send(built.request);
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause : error).message : '';
    return toolError({
      error: 'service_unavailable',
      message: `Could not reach the intake service (${reason}). Check BASE_URL and that the service runs, then retry.`,
    });
  }
  const body = parseJson(response.text);
  if (response.status < 200 || response.status >= 300) {
    if (isRecord(body) && typeof body.error === 'string' && typeof body.message === 'string') {
      return toolError(body as ToolErrorBody);
    }
    return toolError({
      error: response.status >= 500 ? 'internal_error' : 'invalid_request',
      message: `HTTP ${response.status}: ${response.text.slice(0, 500)}`,
    });
  }
  const summary = summaryOf(tool, body, { status: response.status, livemode: caller.livemode, args });
  if (!isRecord(body)) return { content: [{ type: 'text', text: summary }] };
  return {
    content: [
      { type: 'text', text: summary },
      { type: 'text', text: JSON.stringify(body) },
    ],
    structuredContent: body,
  };
}
