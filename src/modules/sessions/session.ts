/**
 * Dashboard sessions: who is signed in, and the CSRF token of their forms.
 *
 * Stable exports for other modules (billing pages, OAuth consent, device approval):
 * - `currentUser(request)`: the signed-in user of a request, or null
 *   (`{ userId, accountId, email, role, livemode, sessionHash }`).
 * - `requireUser(request, reply)`: the user, or null after redirecting to sign-in (return here after).
 * - `redirectToSignIn(request, reply, returnTo?)`: a 303 to /dashboard/sign-in with a return path.
 * - `csrfToken(request)`: the token to put in every form (hidden field `_csrf`).
 * - `assertCsrf(request, token)`: throws 403 `forbidden` unless the token belongs to this browser.
 * - `accountsOf(request, user)`: the accounts the signed-in person may switch to (the switcher's list).
 * - `switchAccount(request, user, accountId)`: moves the session to another of the person's accounts.
 *
 * The cookie holds only a random id (256 bits); the database keeps its SHA-256. Cookies are HttpOnly,
 * SameSite=Lax, Secure (and `__Host-` prefixed) in production and whenever APP_URL is https
 * (`secureCookies`). Sessions end 12 hours after
 * sign-in, on sign-out, or when the user is removed.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../http/errors.js';
import { secureCookies } from '../../http/security-headers.js';
import { deriveKey } from '../../lib/crypto.js';
import { safeReturnPath } from '../../domain/return-path.js';
import { constantTimeEqual, sha256Hex } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { notFound } from '../../http/errors.js';
import {
  deleteExpired,
  findLiveSession,
  insertSession,
  membershipsOf,
  moveSession,
  updateSession,
  type Membership,
} from './sessions.repository.js';

export const SESSION_TTL_MS = 12 * 3_600_000;
export const SIGN_IN_PATH = '/dashboard/sign-in';
const LAST_SEEN_RESOLUTION_MS = 60_000;

export interface SignedInUser {
  userId: string;
  accountId: string;
  email: string;
  role: string;
  /** The world the dashboard shows (the live/test toggle). */
  livemode: boolean;
  /** SHA-256 of the session id: names the session without revealing it. */
  sessionHash: string;
}

interface SessionContext {
  services: AppServices;
  secure: boolean;
  sessionCookie: string;
  preSessionCookie: string;
  csrfKey: Buffer;
  resolved: WeakMap<FastifyRequest, Promise<SignedInUser | null>>;
}

declare module 'fastify' {
  interface FastifyInstance {
    dashboardSessions: SessionContext;
  }
}

/** Makes sessions available to every route (call once, on the root app, before the routes). */
export function registerDashboardSessions(app: FastifyInstance, services: AppServices): void {
  const secure = secureCookies(services.config);
  const prefix = secure ? '__Host-' : '';
  app.decorate('dashboardSessions', {
    services,
    secure,
    sessionCookie: `${prefix}intake_session`,
    preSessionCookie: `${prefix}intake_presession`,
    csrfKey: deriveKey(services.config.secretKey, 'dashboard-csrf'),
    resolved: new WeakMap(),
  });
}

function contextOf(request: FastifyRequest): SessionContext {
  return request.server.dashboardSessions;
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 0) continue;
    if (part.slice(0, index).trim() === name) return decodeURIComponent(part.slice(index + 1).trim());
  }
  return undefined;
}

function cookieHeader(ctx: SessionContext, name: string, value: string, maxAgeSeconds: number): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (ctx.secure) parts.push('Secure');
  return parts.join('; ');
}

function appendCookie(reply: FastifyReply, cookie: string): void {
  const existing = reply.getHeader('set-cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
  void reply.header('set-cookie', [...list, cookie]);
}

/** The signed-in user of this request, or null. Resolved once per request. */
export function currentUser(request: FastifyRequest): Promise<SignedInUser | null> {
  const ctx = contextOf(request);
  let pending = ctx.resolved.get(request);
  if (!pending) {
    pending = resolveUser(ctx, request);
    ctx.resolved.set(request, pending);
  }
  return pending;
}

async function resolveUser(ctx: SessionContext, request: FastifyRequest): Promise<SignedInUser | null> {
  const raw = readCookie(request, ctx.sessionCookie);
  if (!raw || !/^[A-Za-z0-9_-]{43}$/.test(raw)) return null;
  const now = ctx.services.clock.now();
  const found = await findLiveSession(ctx.services.db.kysely, sha256Hex(raw), now.toISOString());
  if (!found) return null;
  const { session, user } = found;
  if (now.getTime() - Date.parse(session.last_seen_at) > LAST_SEEN_RESOLUTION_MS) {
    await updateSession(ctx.services.db.kysely, session.id_hash, { last_seen_at: now.toISOString() });
  }
  return {
    userId: user.id,
    accountId: user.account_id,
    email: user.email,
    role: user.role,
    livemode: session.livemode === 1,
    sessionHash: session.id_hash,
  };
}

/** A landing path is kept only when it is a path of this site (no open redirect): domain/return-path.ts. */
export { safeReturnPath };

export function redirectToSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  returnTo?: string,
): FastifyReply {
  const target = safeReturnPath(returnTo ?? request.url);
  const query = target && target !== '/dashboard' ? `?return_to=${encodeURIComponent(target)}` : '';
  return reply.code(303).header('Location', `${SIGN_IN_PATH}${query}`).send();
}

/** The user, or null once the visitor has been redirected to sign in (return here afterwards). */
export async function requireUser(
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<SignedInUser | null> {
  const user = await currentUser(request);
  if (!user) redirectToSignIn(request, reply, request.method === 'GET' ? request.url : undefined);
  return user;
}

/**
 * Starts a session for a user who proved their email; sets the cookie on the reply. It shows live data
 * unless the caller chose test data (an account whose only intakes are test ones).
 */
export async function startSession(
  request: FastifyRequest,
  reply: FastifyReply,
  user: { id: string; account_id: string },
  livemode = true,
): Promise<void> {
  const ctx = contextOf(request);
  const now = ctx.services.clock.now();
  await deleteExpired(ctx.services.db.kysely, now.toISOString());
  const raw = await openSession(ctx.services.db.kysely, user, livemode, now);
  appendCookie(reply, cookieHeader(ctx, ctx.sessionCookie, raw, SESSION_TTL_MS / 1000));
  // The pre-session token has done its job; a fresh one is made if the visitor signs out.
  appendCookie(reply, cookieHeader(ctx, ctx.preSessionCookie, '', 0));
}

/**
 * A new session of the user, SESSION_TTL_MS long from `now`: its row holds the token's hash; the token
 * itself, returned, is what the session cookie carries.
 */
export async function openSession(
  db: Kysely<Database>,
  user: { id: string; account_id: string },
  livemode: boolean,
  now: Date,
): Promise<string> {
  const raw = randomBytes(32).toString('base64url');
  await insertSession(db, {
    id_hash: sha256Hex(raw),
    user_id: user.id,
    account_id: user.account_id,
    livemode: livemode ? 1 : 0,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + SESSION_TTL_MS).toISOString(),
    last_seen_at: now.toISOString(),
  });
  return raw;
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  const ctx = contextOf(request);
  appendCookie(reply, cookieHeader(ctx, ctx.sessionCookie, '', 0));
}

function sign(ctx: SessionContext, material: string): string {
  return createHmac('sha256', ctx.csrfKey).update(material).digest('base64url');
}

/**
 * The CSRF token of this browser: bound to the session cookie when signed in, otherwise to a
 * pre-session cookie (set here when missing) so the sign-in forms are protected too.
 */
export function csrfToken(request: FastifyRequest, reply?: FastifyReply): string {
  const ctx = contextOf(request);
  const session = readCookie(request, ctx.sessionCookie);
  if (session) return sign(ctx, `session:${session}`);
  let pre = readCookie(request, ctx.preSessionCookie);
  if (!pre) {
    pre = randomBytes(24).toString('base64url');
    if (reply) appendCookie(reply, cookieHeader(ctx, ctx.preSessionCookie, pre, 3600));
    // Remember it for the rest of this request, so every form of the page gets the same token.
    request.headers.cookie = [request.headers.cookie, `${ctx.preSessionCookie}=${pre}`]
      .filter(Boolean)
      .join('; ');
  }
  return sign(ctx, `pre:${pre}`);
}

/** Throws 403 unless `token` is this browser's CSRF token (forms POST it as `_csrf`). */
export function assertCsrf(request: FastifyRequest, token: unknown): void {
  const ctx = contextOf(request);
  const session = readCookie(request, ctx.sessionCookie);
  const pre = readCookie(request, ctx.preSessionCookie);
  const expected = [session && sign(ctx, `session:${session}`), pre && sign(ctx, `pre:${pre}`)].filter(
    (value): value is string => Boolean(value),
  );
  const ok = typeof token === 'string' && expected.some((value) => constantTimeEqual(value, token));
  if (!ok) {
    throw new ApiError(
      'forbidden',
      'The form expired or came from another site: reload the page and try again.',
    );
  }
}

/** The live/test toggle: the world this session's pages show. */
export async function setSessionMode(
  request: FastifyRequest,
  user: SignedInUser,
  livemode: boolean,
): Promise<void> {
  await updateSession(contextOf(request).services.db.kysely, user.sessionHash, {
    livemode: livemode ? 1 : 0,
  });
}

/**
 * The accounts the signed-in person can use: the one they are in, and every other account where
 * their address is an active member (an invitation not yet accepted through its link does not count).
 * The one used last comes first.
 */
export async function accountsOf(request: FastifyRequest, user: SignedInUser): Promise<Membership[]> {
  const all = await membershipsOf(contextOf(request).services.db.kysely, user.email);
  return all.filter((m) => m.account_id === user.accountId || m.status === 'active');
}

/**
 * The account switcher: the session moves to the same person's membership in another account, without
 * a new sign-in. Only among accounts where the address is an active member; any other id answers 404,
 * as another account's ids do everywhere. Returns the membership switched to.
 */
export async function switchAccount(
  request: FastifyRequest,
  user: SignedInUser,
  accountId: string,
): Promise<Membership> {
  const target = (await accountsOf(request, user)).find((m) => m.account_id === accountId);
  if (!target) throw notFound('account', accountId);
  const services = contextOf(request).services;
  await moveSession(services.db.kysely, user.sessionHash, {
    userId: target.user_id,
    accountId: target.account_id,
    nowIso: services.clock.now().toISOString(),
  });
  contextOf(request).resolved.delete(request);
  return target;
}
