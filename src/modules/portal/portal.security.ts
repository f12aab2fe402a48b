import type { FastifyInstance, FastifyRequest, onSendHookHandler } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { toArray } from '../../lib/arrays.js';
import type { AppServices } from '../../services.js';
import { canonicalIntakeId } from '../intakes/intakes.service.js';

/**
 * The portal's protections. The intake id is the only capability, so: strict headers on every portal
 * answer (no framing, no referrer leaking the id, no sniffing, a CSP that allows only this origin),
 * and rate limits on every portal write, per intake and per IP address, counted in the same exact
 * rolling window as the API (services.limiter: in-process, or Redis across processes).
 */

/** Writes per rolling hour. Autosave is debounced, so typing for an hour costs a few hundred. */
export const PORTAL_LIMITS = {
  writesPerIntake: 1200,
  writesPerIp: 3000,
  /** tus PATCH/HEAD/DELETE: one large file is many chunks. */
  transfersPerIntake: 6000,
  transfersPerIp: 12000,
  /** Comments: a conversation, not a stream; each may become an email to the owner. */
  commentsPerIntake: 60,
  commentsPerIp: 120,
} as const;

export function portalContentSecurityPolicy(nonce?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    `style-src 'self'${nonce ? ` 'nonce-${nonce}'` : ''}`,
    "img-src 'self' blob: data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function portalSecurityHeaders(nonce?: string): Record<string, string> {
  return {
    'Content-Security-Policy': portalContentSecurityPolicy(nonce),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'microphone=(), geolocation=(), payment=(), usb=()',
  };
}

type WriteKind = 'write' | 'transfer' | 'comment';

const TUS_UPLOAD = '/portal/api/:intake_id/items/:key/tus/:upload_id';
const WRITE_ROUTES = new Set([
  'PUT /portal/api/:intake_id/items/:key',
  'POST /portal/api/:intake_id/items/:key/files',
  'DELETE /portal/api/:intake_id/items/:key/files/:file_id',
  'POST /portal/api/:intake_id/items/:key/submit',
  'POST /portal/api/:intake_id/items/:key/tus',
  'POST /portal/:intake_id/items/:key',
  'POST /portal/:intake_id/items/:key/upload',
  'POST /portal/:intake_id/items/:key/files/:file_id/remove',
]);

const COMMENT_ROUTES = new Set([
  'POST /portal/api/:intake_id/items/:key/comments',
  'POST /portal/:intake_id/items/:key/comments',
]);

function writeKind(method: string, route: string): WriteKind | undefined {
  if (!route.startsWith('/portal/')) return undefined;
  if (COMMENT_ROUTES.has(`${method} ${route}`)) return 'comment';
  if (route === TUS_UPLOAD && method !== 'OPTIONS') return 'transfer';
  return WRITE_ROUTES.has(`${method} ${route}`) ? 'write' : undefined;
}

export function registerPortalSecurity(app: FastifyInstance, services: AppServices): void {
  /** Write limits for one route: per intake and per network address, in the same rolling window as keys. */
  function limitWrites(kind: WriteKind): (request: FastifyRequest) => Promise<void> {
    const limits: Record<WriteKind, { perIntake: number; perIp: number; prefix: string }> = {
      write: { perIntake: PORTAL_LIMITS.writesPerIntake, perIp: PORTAL_LIMITS.writesPerIp, prefix: 'portal' },
      transfer: {
        perIntake: PORTAL_LIMITS.transfersPerIntake,
        perIp: PORTAL_LIMITS.transfersPerIp,
        prefix: 'portal-tus',
      },
      comment: {
        perIntake: PORTAL_LIMITS.commentsPerIntake,
        perIp: PORTAL_LIMITS.commentsPerIp,
        prefix: 'portal-comment',
      },
    };
    const { perIntake, perIp, prefix } = limits[kind];
    return async (request) => {
      const params = request.params as { intake_id?: string };
      const intake = canonicalIntakeId(params.intake_id ?? '');
      const now = services.clock.now().getTime();
      for (const [bucket, limit, what] of [
        [`${prefix}:${intake}`, perIntake, 'this intake'],
        [`${prefix}-ip:${request.ip}`, perIp, 'your network address'],
      ] as const) {
        const decision = await services.limiter.hit(bucket, limit, now);
        if (!decision.allowed) {
          throw new ApiError(
            'rate_limited',
            `Too many changes from ${what}: at most ${limit} per hour (rolling window). Retry in ${decision.retryAfterSeconds} seconds.`,
            {},
            { 'Retry-After': String(decision.retryAfterSeconds) },
          );
        }
      }
    };
  }

  // Every portal answer (pages, JSON, assets) carries the headers; a page sets its own CSP with a nonce.
  const headers = Object.entries(portalSecurityHeaders());
  const addPortalHeaders: onSendHookHandler = (_request, reply, payload, done) => {
    for (const [name, value] of headers) {
      if (!reply.hasHeader(name)) void reply.header(name, value);
    }
    done(null, payload);
  };

  // Attached to portal routes only, when each is added: the API and the dashboard pay nothing for them.
  app.addHook('onRoute', (route) => {
    if (route.url !== '/portal' && !route.url.startsWith('/portal/')) return;
    const methods = toArray(route.method);
    const kinds = new Set(methods.map((method) => writeKind(method, route.url)));
    kinds.delete(undefined);
    if (kinds.size > 1) throw new Error(`Portal route ${route.url} mixes write kinds across methods`);
    const [kind] = kinds;
    if (kind) route.onRequest = [...toArray(route.onRequest), limitWrites(kind)];
    route.onSend = [...toArray(route.onSend), addPortalHeaders];
  });
}
