import type { FastifyInstance, FastifyRequest, onSendAsyncHookHandler } from 'fastify';
import { toArray } from '../../lib/arrays.js';
import type { AppServices } from '../../services.js';
import { insertAuditEntry } from './audit.repository.js';

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

/**
 * Writes the audit entry of every successful call to a route that declares `config.audit`,
 * before the answer leaves, so a caller never sees a success that the log lacks.
 */
export function registerAuditHook(app: FastifyInstance, services: AppServices): void {
  const record: onSendAsyncHookHandler = async (request, reply, payload) => {
    const audit = request.routeOptions.config.audit;
    const auth = request.auth;
    if (!audit || !auth || reply.statusCode >= 300) return payload;
    await insertAuditEntry(services.db.kysely, {
      account_id: auth.account.id,
      livemode: auth.livemode ? 1 : 0,
      action: audit.action,
      resource_type: audit.resourceType,
      resource_id: resourceIdOf(request, audit.resourceType, auth.account.id),
      actor_type: 'api_key',
      actor_id: auth.keyId,
      request_id: request.id,
      created_at: services.clock.now().toISOString(),
    });
    return payload;
  };
  // Only routes that declare `config.audit` carry the hook: reads pay nothing for it.
  app.addHook('onRoute', (route) => {
    if (!route.config?.audit) return;
    const existing = toArray(route.onSend);
    if (!existing.includes(record)) route.onSend = [...existing, record];
  });
}
