import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthContext } from '../../http/auth.js';
import { translator } from '../../i18n/index.js';
import { offsetClock } from '../../lib/clock.js';
import type { AppServices } from '../../services.js';
import { runAudited, type PendingAudit } from '../audit/audit.scope.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import type { World } from '../../kernel/world.js';
import type { AccountRow } from '../keys/keys.repository.js';
import type { DashboardAssets } from './assets.js';
import type { Chrome } from './layout.js';
import { csrfToken, requireUser, type SignedInUser } from '../sessions/session.js';

/**
 * A signed-in page's context. Pages act through the same services as the REST routes, as a `World`
 * whose actor is the user, and, where a service takes an API caller, as an admin caller named by
 * the user's id (the dashboard is the account holder's own console).
 */
export interface DashboardContext extends Chrome {
  services: AppServices;
  user: SignedInUser;
  account: AccountRow;
  world: World;
  auth: AuthContext;
  requestId: string;
}

export async function dashboardContext(
  services: AppServices,
  assets: DashboardAssets,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<DashboardContext | null> {
  const user = await requireUser(request, reply);
  if (!user) return null;
  const account = await services.db.kysely
    .selectFrom('accounts')
    .selectAll()
    .where('id', '=', user.accountId)
    .executeTakeFirstOrThrow();
  const offsetMs = user.livemode ? 0 : Number(account.test_clock_offset_ms);
  const clock = user.livemode ? services.clock : offsetClock(services.clock, offsetMs);
  const world: World = {
    accountId: account.id,
    livemode: user.livemode,
    clock,
    offsetMs,
    actor: { type: 'user', id: user.userId },
  };
  const lang = account.default_language;
  return {
    services,
    user,
    account,
    world,
    auth: { account, keyId: user.userId, scopes: ['admin'], livemode: user.livemode, clock },
    requestId: request.id,
    t: translator(lang, 'dashboard'),
    lang,
    csrf: csrfToken(request, reply),
    assets,
    accountName: account.name,
    email: user.email,
    livemode: user.livemode,
    path: request.url,
  };
}

/**
 * Runs a user's change with its audit entry pending: the service writes the entry in the change's
 * transaction (`auditInTransaction`), so the two commit together. A service that writes none (a change
 * outside our database) gets the entry here, after it.
 */
export async function asUserAction<T>(
  ctx: DashboardContext,
  action: string,
  resourceType: string,
  resourceId: string | null,
  change: () => Promise<T>,
): Promise<T> {
  const pending: PendingAudit = {
    entry: userEntry(ctx, action, resourceType, resourceId),
    clock: ctx.services.clock,
    written: false,
  };
  const result = await runAudited(pending, change);
  if (!pending.written) await auditUserAction(ctx, action, resourceType, resourceId);
  return result;
}

/** Every user action is audited like an API action, with the user as the actor. */
export async function auditUserAction(
  ctx: DashboardContext,
  action: string,
  resourceType: string,
  resourceId: string | null,
): Promise<void> {
  await insertAuditEntry(ctx.services.db.kysely, {
    ...userEntry(ctx, action, resourceType, resourceId),
    created_at: ctx.services.clock.now().toISOString(),
  });
}

/** The audit entry of a user's action, all but its time. */
function userEntry(
  ctx: DashboardContext,
  action: string,
  resourceType: string,
  resourceId: string | null,
): PendingAudit['entry'] {
  return {
    account_id: ctx.account.id,
    livemode: ctx.livemode ? 1 : 0,
    action,
    resource_type: resourceType,
    resource_id: resourceId,
    actor_type: 'user',
    actor_id: ctx.user.userId,
    request_id: ctx.requestId,
  };
}
