import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { callTool, type RestCaller, type ToolSpec } from './mcp.executor.js';
import { SERVER_INSTRUCTIONS } from './mcp.guidance.js';
import { portableSchema } from './mcp.portable.js';
import { TOOLS, TOOLS_BY_NAME } from './mcp.tools.js';

export const MCP_SERVER_INFO = { name: 'intake-service', version: '1.0.0' } as const;

type JsonSchema = Record<string, unknown>;

/** A field computed by a transform: JSON Schema cannot tell its output, which may also be absent. */
function isTransformed(field: unknown): boolean {
  return field instanceof z.ZodPipe && field.out instanceof z.ZodTransform;
}

/**
 * A zod schema as the JSON Schema a tool lists. Draft-07, like the SDK's own servers, so every MCP
 * client's validator reads it. A schema with an `id` comes out as a `$ref` into `definitions`; MCP
 * wants `type: "object"` at the root, so that definition is inlined there.
 *
 * Output schemas: clients check every result against them, so they must never be stricter than the
 * answers. A transformed field (`help: …nullish().transform(v => v ?? undefined)`) is any JSON and
 * not required: it may be left out of the answer.
 *
 * Where a `format` (date-time, date, email) says what a string is, zod's equivalent `pattern` (some
 * 300 characters for a timestamp) is left out: tool lists are read into an agent's context, and the
 * REST API validates every value anyway.
 *
 * Last, the schema is put in the subset every agent host reads (mcp.portable.ts): nullable fields as
 * `anyOf` with `{type: "null"}`, no empty schemas, no references, no `$schema`.
 */
export function toolJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io,
    target: 'draft-7',
    unrepresentable: io === 'output' ? 'any' : 'throw',
    override: ({ zodSchema, jsonSchema }) => {
      if (jsonSchema.format !== undefined) delete jsonSchema.pattern;
      if (io !== 'output' || !(zodSchema instanceof z.ZodObject) || !jsonSchema.required) return;
      const shape = zodSchema.shape as Record<string, unknown>;
      const required = jsonSchema.required.filter((key) => !isTransformed(shape[key]));
      if (required.length > 0) jsonSchema.required = required;
      else delete jsonSchema.required;
    },
  }) as JsonSchema;
  const definitions = (json.definitions ?? {}) as Record<string, JsonSchema>;
  const inlined = inlineRefs(json, definitions, []) as JsonSchema;
  const { definitions: _definitions, ...rest } = inlined;
  // A recursive shape keeps its references, and so the definitions they point into (the portability
  // check reports them: no tool has one).
  return portableSchema(JSON.stringify(rest).includes('"$ref"') ? inlined : rest);
}

/**
 * Replaces every `$ref` into `definitions` by the definition itself: many MCP clients (and the models
 * behind them) do not follow references, so a tool's schema must stand on its own. A reference back
 * into a definition being inlined (a recursive shape) stays a reference, with its definition kept.
 */
function inlineRefs(node: unknown, definitions: Record<string, JsonSchema>, within: string[]): unknown {
  if (Array.isArray(node)) return node.map((entry) => inlineRefs(entry, definitions, within));
  if (typeof node !== 'object' || node === null) return node;
  const { $ref, ...rest } = node as JsonSchema;
  const name = typeof $ref === 'string' ? /^#\/definitions\/(.+)$/.exec($ref)?.[1] : undefined;
  const resolved: JsonSchema = {};
  if (name !== undefined) {
    const definition = definitions[name];
    if (!definition || within.includes(name)) return node;
    Object.assign(resolved, inlineRefs(definition, definitions, [...within, name]) as JsonSchema);
  }
  for (const [key, value] of Object.entries(rest)) {
    if (key === 'definitions') continue;
    resolved[key] = inlineRefs(value, definitions, within);
  }
  return resolved;
}

function listedTool(tool: ToolSpec): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toolJsonSchema(tool.input, 'input') as Tool['inputSchema'],
    ...(tool.output ? { outputSchema: toolJsonSchema(tool.output, 'output') as Tool['outputSchema'] } : {}),
    annotations: { title: tool.title, ...tool.annotations },
  };
}

let listed: Tool[] | undefined;
/** Computed once per process: the list is the same for every caller. */
export function listedTools(): Tool[] {
  listed ??= TOOLS.map(listedTool);
  return listed;
}

/**
 * A tool of one transport that is no REST endpoint: the stdio server's sign-in (login, logout), which
 * changes the key its REST tools act with. Over HTTP the key is the request's own, so these are absent.
 */
export interface LocalTool {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  annotations: ToolAnnotations;
  run(args: Record<string, unknown>): Promise<CallToolResult>;
}

export interface LocalTools {
  tools: readonly LocalTool[];
  /** Runs before every REST tool: a tool error result (not signed in…) stops the call. */
  beforeRestCall(): Promise<CallToolResult | undefined>;
}

function listedLocalTool(tool: LocalTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toolJsonSchema(tool.input, 'input') as Tool['inputSchema'],
    annotations: { title: tool.title, ...tool.annotations },
  };
}

/** An MCP server whose tools act through `caller`: one REST request with the caller's key per call. */
export function createMcpServer(caller: RestCaller, local?: LocalTools): Server {
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: SERVER_INSTRUCTIONS,
  });
  const localTools = new Map((local?.tools ?? []).map((tool) => [tool.name, tool]));
  const listedLocal = [...localTools.values()].map(listedLocalTool);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...listedTools(), ...listedLocal] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    const own = localTools.get(request.params.name);
    if (own) return own.run(args);
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool) {
      const names = [...TOOLS.map((t) => t.name), ...localTools.keys()];
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool ${request.params.name}; the tools are ${names.join(', ')}.`,
      );
    }
    const refused = await local?.beforeRestCall();
    if (refused) return refused;
    return callTool(tool, args, caller);
  });
  return server;
}
