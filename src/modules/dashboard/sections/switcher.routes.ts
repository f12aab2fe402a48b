import type { FastifyInstance } from 'fastify';
import { insertAuditEntry } from '../../audit/audit.service.js';
import { switchAccount } from '../../sessions/session.js';
import { switcherPage } from '../pages/switcher.js';
import { action, notices, page, redirect, type Deps } from '../routing.js';

/**
 * The account switcher: a person who belongs to several accounts moves their session between them
 * without signing in again, only among accounts where their address is an active member.
 */
export function switcherRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/accounts', (ctx, request) =>
    Promise.resolve(switcherPage(ctx, notices(ctx, request.query.notice))),
  );

  action(scope, deps, '/dashboard/accounts/switch', async (ctx, form, request, reply) => {
    const target = await switchAccount(request, ctx.user, form.get('account_id') ?? '');
    // The entry belongs to the account switched to: its audit log says who came in, and when.
    await insertAuditEntry(ctx.services.db.kysely, {
      account_id: target.account_id,
      livemode: ctx.livemode ? 1 : 0,
      action: 'user.account_switch',
      resource_type: 'user',
      resource_id: target.user_id,
      actor_type: 'user',
      actor_id: target.user_id,
      person_id: target.user_id,
      request_id: ctx.requestId,
      created_at: ctx.services.clock.now().toISOString(),
    });
    return redirect(reply, '/dashboard/intakes', 'switched');
  });
}
