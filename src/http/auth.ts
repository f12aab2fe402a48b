import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { rateLimitFor, planOf } from '../domain/plans.js';
import { effectiveScopes, isRole, type Role } from '../domain/roles.js';
import { hasScope, type Scope } from '../domain/scopes.js';
import { toArray } from '../lib/arrays.js';
import { offsetClock, type Clock } from '../lib/clock.js';
import type { FoundKey } from '../modules/keys/key-lookup.js';
import type { AccountRow } from '../modules/keys/keys.repository.js';
import type { AppServices } from '../services.js';
import { andThen, type MaybePromise } from '../lib/maybe-promise.js';
import { ApiError } from './errors.js';
import type { RateLimitDecision } from './rate-limit/limiter.js';

/** Who is calling: the account, the key, its mode (data world) and that mode's clock. */
export interface AuthContext {
  account: Readonly<AccountRow>;
  keyId: string;
  scopes: readonly string[];
  livemode: boolean;
  clock: Clock;
  /**
   * The member acting (a dashboard user) or who made the key, with their role; absent or null for the
   * account holder's own keys (made by the CLI). `scopes` never exceed what the role allows.
   */
  person?: { id: string; role: Role } | null;
  /**
   * The account's answer version, read with the key before anything else the request reads, where keys
   * are read for every request (PostgreSQL): the kept answers are checked against it (read-memo.ts).
   */
  answerVersion?: number | undefined;
}

/** `any`: any valid key; a scope: a key holding it (admin holds all). Routes without `scope` are public. */
export type RouteScope = Scope | 'any';

declare module 'fastify' {
  interface FastifyContextConfig {
    scope?: RouteScope;
    /** Billing and ownership: refused (403) to a key whose person is not the account's owner. */
    ownerOnly?: boolean;
    audit?: { action: string; resourceType: string };
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    /** Set by a handler that creates a resource, so the audit entry names it (else the route's :id). */
    auditResourceId?: string;
  }
}

/**
 * Where the authentication hook finds API keys. The keys module owns the table and provides this at the
 * composition root, so the HTTP layer depends on no module.
 */
export interface ApiKeyStore {
  /** Whether a bearer token has the form of an API key (malformed ones never reach the database). */
  isKeyShaped(token: string): boolean;
  /** The active, unexpired key of this token and its account, as of `at`. */
  find(token: string, at: Date): MaybePromise<FoundKey | undefined>;
  /** Records that the key was used at `at`. */
  touch(keyId: string, at: Date): Promise<void>;
}

/** The key of `Authorization: Bearer <key>`; 401 when the header is missing or holds no API key. */
function bearerToken(header: string | undefined, keys: ApiKeyStore): string {
  if (!header) {
    throw new ApiError(
      'unauthorized',
      'Missing API key: send the header Authorization: Bearer svc_live_… or svc_test_….',
    );
  }
  const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (!token || !keys.isKeyShaped(token)) {
    throw new ApiError(
      'unauthorized',
      'Invalid API key: expected Authorization: Bearer svc_live_… or svc_test_….',
    );
  }
  return token;
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** The auth context of a secured route; its absence is a programming error, not a client one. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new Error(`Route ${request.url} has no scope but reads the caller`);
  return request.auth;
}

const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Authentication, rate limiting and scope checks, in one place for every route, driven by the
 * route's `config.scope`. The same setting documents the route in OpenAPI (security + required scope).
 */
export function registerAuth(app: FastifyInstance, services: AppServices, keys: ApiKeyStore): void {
  const lastTouched = new Map<string, number>();
  app.decorateRequest('auth', null);

  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (!scope) return;
    // Secured routes only: public ones (health, pricing, portal, files) pay nothing for auth.
    const hooks = toArray(route.onRequest);
    if (!hooks.includes(guard)) route.onRequest = [guard, ...hooks];
    // The automatic HEAD twin of a GET route shares its schema object: document it once.
    if (!route.schema || route.schema.security) return;
    const needs =
      scope === 'any' ? 'any valid API key' : `a key with the \`${scope}\` scope (admin includes all)`;
    route.schema.security = [{ bearerAuth: [] }];
    const owner = route.config?.ownerOnly
      ? " A key made by a member (dashboard, OAuth, device sign-in) must be the account owner's."
      : '';
    route.schema.description = [route.schema.description, `Requires ${needs}.${owner}`]
      .filter(Boolean)
      .join('\n\n');
    (route.schema as Record<string, unknown>)['x-required-scope'] = scope;
  });

  /**
   * A callback hook, not an async one: when the key is kept in memory and the limiter is in-process,
   * admitting a request needs no promise at all (this runs before every authenticated answer).
   */
  function guard(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    const scope = request.routeOptions.config.scope;
    if (!scope) return done();
    let admitted: MaybePromise<void>;
    try {
      admitted = admit(request, reply, scope);
    } catch (error) {
      return done(toError(error));
    }
    if (admitted instanceof Promise)
      admitted.then(
        () => done(),
        (error: unknown) => done(toError(error)),
      );
    else done();
  }

  function admit(request: FastifyRequest, reply: FastifyReply, scope: RouteScope): MaybePromise<void> {
    const token = bearerToken(request.headers.authorization, keys);
    const now = services.clock.now();
    return andThen(keys.find(token, now), (found) => {
      if (!found) throw new ApiError('unauthorized', 'Invalid or revoked API key.');
      const auth = authContextOf(found);
      request.auth = auth;
      return andThen(noteKeyUse(auth.keyId, now), () =>
        andThen(services.limiter.hit(auth.keyId, rateLimitFor(auth.account), now.getTime()), (decision) => {
          applyRateLimit(auth, decision, reply);
          if (scope !== 'any' && !hasScope(auth.scopes, scope)) {
            const why = auth.person ? ` (its person's role, ${auth.person.role}, allows no more)` : '';
            throw new ApiError(
              'forbidden',
              `This API key lacks the ${scope} scope needed for this request${why}.`,
            );
          }
          if (request.routeOptions.config.ownerOnly && auth.person && auth.person.role !== 'owner') {
            throw new ApiError(
              'forbidden',
              `Only the account's owner may do this; this key's person is ${auth.person.role}.`,
            );
          }
        }),
      );
    });
  }

  /**
   * The caller's context, made once per found key: between commits the key lookup answers with the same
   * frozen object (findKeyForRequest), so its scopes are parsed and its clock made once, not per request.
   */
  const contexts = new WeakMap<FoundKey, AuthContext>();
  function authContextOf(found: FoundKey): AuthContext {
    let auth = contexts.get(found);
    if (!auth) {
      const { key, account } = found;
      const livemode = key.livemode === 1;
      const role: Role | null = isRole(found.personRole) ? found.personRole : null;
      const person = key.created_by_user_id && role ? { id: key.created_by_user_id, role } : null;
      auth = Object.freeze({
        account,
        keyId: key.id,
        scopes: Object.freeze(effectiveScopes(key.scopes, role)),
        person,
        livemode,
        clock: livemode ? services.clock : offsetClock(services.clock, account.test_clock_offset_ms),
        answerVersion: found.answerVersion,
      });
      contexts.set(found, auth);
    }
    return auth;
  }

  /** last_used_at at one-minute resolution: one write per key per minute, not per request. */
  function noteKeyUse(keyId: string, now: Date): MaybePromise<void> {
    const previous = lastTouched.get(keyId) ?? 0;
    if (now.getTime() - previous < LAST_USED_RESOLUTION_MS) return;
    lastTouched.set(keyId, now.getTime());
    return keys.touch(keyId, now);
  }

  function applyRateLimit(auth: AuthContext, decision: RateLimitDecision, reply: FastifyReply): void {
    const limit = decision.limit;
    // Each key is its own bucket; test keys are separate keys, so test traffic never eats live quota.
    reply.header('X-RateLimit-Limit', limit);
    reply.header('X-RateLimit-Remaining', decision.remaining);
    reply.header('X-RateLimit-Reset', decision.resetAt);
    if (!decision.allowed) {
      const plan =
        auth.account.rate_limit_per_hour === null
          ? `the ${planOf(auth.account.plan).name} plan`
          : 'this account';
      throw new ApiError(
        'rate_limited',
        `Rate limit of ${limit} requests per hour for ${plan} reached (rolling 60-minute window, per API key). Retry in ${decision.retryAfterSeconds} seconds.`,
        {},
        { 'Retry-After': String(decision.retryAfterSeconds) },
      );
    }
  }
}

/** Test helpers act on test data only: the error for a live key, undefined for a test key. */
export function testModeError(auth: AuthContext): ApiError | undefined {
  if (!auth.livemode) return undefined;
  return new ApiError(
    'forbidden',
    'Test helpers work in test mode only: call /v1/test_helpers/… with a test key (svc_test_…), not a live key.',
  );
}

export function assertTestMode(auth: AuthContext): void {
  const error = testModeError(auth);
  if (error) throw error;
}
