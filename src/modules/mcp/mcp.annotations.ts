import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';

/*
 * What each tool does, told to the host in MCP's annotations, every hint given explicitly (a missing
 * destructiveHint means "destructive" to a host, a missing readOnlyHint "writes"). A host may
 * auto-approve read-only tools and ask the user before destructive ones, so:
 * - read-only: changes nothing at all, not even a cursor or a "revealed" mark;
 * - destructive: may drop or overwrite data (a delete, a replaced value, a secret shown only once);
 * - open world: reaches someone outside the service (the client's inbox, a webhook receiver).
 * test/mcp.test.ts checks these against every tool's routes.
 */

export const READ_ONLY = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
} as const satisfies ToolAnnotations;

/** Adds to the account's data and reaches nobody outside the service. */
export const INTERNAL_WRITE = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
} as const satisfies ToolAnnotations;

/** Emails (or texts) the client in live mode. */
export const REACHES_CLIENT = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
} as const satisfies ToolAnnotations;

/** Drops or overwrites data: a host should confirm with the user. */
export const DESTRUCTIVE = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: false,
} as const satisfies ToolAnnotations;
