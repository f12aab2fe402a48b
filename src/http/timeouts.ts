import type { ServerOptions } from 'node:http';

/**
 * How long a client may take, so slow clients (slowloris: headers or a body dribbled in byte by byte,
 * or a connection held open saying nothing) cannot hold sockets and memory forever.
 */
export interface HttpTimeouts {
  /** Whole request head (request line and headers). */
  headersMs: number;
  /** Whole request, body included. Large files go through tus (chunked), so this bounds one chunk or form post. */
  requestMs: number;
  /** A connection on which nothing moves for this long is closed. */
  idleMs: number;
  /** An idle keep-alive connection between requests; above common load balancers' 60 s. */
  keepAliveMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = {
  headersMs: 15_000,
  requestMs: 60 * 60_000,
  idleMs: 60_000,
  keepAliveMs: 72_000,
};

/** Fastify's options for these timeouts (Node checks headers and request deadlines on an interval). */
export function timeoutOptions(overrides: Partial<HttpTimeouts> = {}): {
  connectionTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  http: ServerOptions;
} {
  const t = { ...DEFAULT_HTTP_TIMEOUTS, ...overrides };
  return {
    connectionTimeout: t.idleMs,
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.keepAliveMs,
    http: {
      headersTimeout: Math.min(t.headersMs, t.requestMs),
      // Node's default check runs every 30 s: too coarse for a 15 s header deadline.
      connectionsCheckingInterval: Math.max(250, Math.min(5_000, Math.floor(t.headersMs / 4))),
    },
  };
}
