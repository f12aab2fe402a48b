import type { FastifyReply, FastifyRequest } from 'fastify';
import { dashboardAllows, isRole, scopesOfRole, type Role } from '../../domain/roles.js';
import type { AuthContext } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import { translator } from '../../i18n/index.js';
import { offsetClock } from '../../lib/clock.js';
import type { AppServices } from '../../services.js';
import { runAudited, type PendingAudit } from '../audit/audit.scope.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import type { World } from '../../kernel/world.js';
import type { AccountRow } from '../keys/keys.repository.js';
import type { DashboardAssets } from './assets.js';
import type { Chrome } from './layout.js';
import { accountsOf, csrfToken, requireUser, type SignedInUser } from '../sessions/session.js';

/**
 * A signed-in page's context. Pages act through the same services as the REST routes, as a `World`
 * whose actor is the user, and, where a service takes an API caller, as a caller named by the user's
 * id holding the scopes of the user's role. A route the role does not allow answers 403 here, before
 * its handler runs (the pages also hide what the role cannot use, as a courtesy only).
 */
export interface DashboardContext extends Chrome {
  services: AppServices;
  user: SignedInUser;
  role: Role;
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
  // A role this version does not know is read as the narrowest one.
  const role: Role = isRole(user.role) ? user.role : 'viewer';
  if (!dashboardAllows(role, request.method, request.routeOptions.url ?? request.url)) {
    throw new ApiError('forbidden', `Your role (${role}) does not allow this. Ask an admin of the account.`);
  }
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
  const accounts = (await accountsOf(request, user)).map((m) => ({
    id: m.account_id,
    name: m.account_name,
    role: isRole(m.role) ? m.role : 'viewer',
  }));
  return {
    services,
    user,
    role,
    account,
    world,
    auth: {
      account,
      keyId: user.userId,
      scopes: scopesOfRole(role),
      livemode: user.livemode,
      clock,
      person: { id: user.userId, role },
    },
    requestId: request.id,
    t: translator(lang, 'dashboard'),
    lang,
    csrf: csrfToken(request, reply),
    assets,
    accountName: account.name,
    email: user.email,
    livemode: user.livemode,
    path: request.url,
    accountId: account.id,
    accounts,
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
    person_id: ctx.user.userId,
    request_id: ctx.requestId,
  };
}
