import type { FastifyInstance, FastifyRequest, onSendAsyncHookHandler, RouteHandlerMethod } from 'fastify';
import type { AuthContext } from '../../http/auth.js';
import { toArray } from '../../lib/arrays.js';
import type { AppServices } from '../../services.js';
import { insertAuditEntry } from './audit.repository.js';
import { runAudited, type PendingAudit } from './audit.scope.js';

/**
 * The resource an entry names: what the handler set (a resource it just created), else the route's
 * `:id` (the resource it acted on), else the account itself for account-wide actions.
 */
function resourceIdOf(request: FastifyRequest, resourceType: string, accountId: string): string | null {
  if (request.auditResourceId) return request.auditResourceId;
  const params = request.params as { id?: unknown } | undefined;
  if (typeof params?.id === 'string') return params.id;
  return resourceType === 'account' ? accountId : null;
}

const pendingAudits = new WeakMap<FastifyRequest, PendingAudit>();
const wrapped = new WeakSet<RouteHandlerMethod>();

/** The entry of an API call to an audited route, all but its time. */
function entryOf(
  request: FastifyRequest,
  audit: { action: string; resourceType: string },
  auth: AuthContext,
): PendingAudit['entry'] {
  return {
    account_id: auth.account.id,
    livemode: auth.livemode ? 1 : 0,
    action: audit.action,
    resource_type: audit.resourceType,
    resource_id: resourceIdOf(request, audit.resourceType, auth.account.id),
    actor_type: 'api_key',
    actor_id: auth.keyId,
    person_id: auth.person?.id ?? null,
    request_id: request.id,
  };
}

function pendingAuditOf(request: FastifyRequest, services: AppServices): PendingAudit | undefined {
  const audit = request.routeOptions.config.audit;
  const auth = request.auth;
  if (!audit || !auth) return undefined;
  const pending: PendingAudit = {
    entry: entryOf(request, audit, auth),
    clock: services.clock,
    written: false,
  };
  pendingAudits.set(request, pending);
  return pending;
}

/**
 * The audit entry of every successful call to a route that declares `config.audit`. The service that
 * makes the change writes it in its transaction (`auditInTransaction`); for a route whose service wrote
 * none (a replayed create, a change outside our database) it is written here, before the answer leaves,
 * so a caller never sees a success that the log lacks.
 */
export function registerAuditHook(app: FastifyInstance, services: AppServices): void {
  const record: onSendAsyncHookHandler = async (request, reply, payload) => {
    const audit = request.routeOptions.config.audit;
    const auth = request.auth;
    if (!audit || !auth || reply.statusCode >= 300) return payload;
    if (pendingAudits.get(request)?.written) return payload;
    await insertAuditEntry(services.db.kysely, {
      ...entryOf(request, audit, auth),
      created_at: services.clock.now().toISOString(),
    });
    return payload;
  };
  // Only routes that declare `config.audit` carry the hook: reads pay nothing for it.
  app.addHook('onRoute', (route) => {
    if (!route.config?.audit) return;
    const existing = toArray(route.onSend);
    if (!existing.includes(record)) route.onSend = [...existing, record];
    const handler = route.handler;
    if (wrapped.has(handler)) return;
    const audited: RouteHandlerMethod = function (this: FastifyInstance, request, reply) {
      const pending = pendingAuditOf(request, services);
      return pending
        ? runAudited(pending, () => handler.call(this, request, reply))
        : handler.call(this, request, reply);
    };
    wrapped.add(audited);
    route.handler = audited;
  });
}
