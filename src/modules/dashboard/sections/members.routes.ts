import type { FastifyInstance } from 'fastify';
import { planOf } from '../../../domain/plans.js';
import { isRole } from '../../../domain/roles.js';
import type { AuthContext } from '../../../http/auth.js';
import { ApiError } from '../../../http/errors.js';
import { InviteMemberBody } from '../../sessions/members.schemas.js';
import { changeMemberRole, inviteMember, listMembers, removeMember } from '../../sessions/members.service.js';
import { asUserAction, auditUserAction, type DashboardContext } from '../context.js';
import { membersPage } from '../pages/members.js';
import { action, notices, page, redirect, type Deps } from '../routing.js';
import { describeIssues } from './intakes.routes.js';

type IdParams = { id: string };

/** The team is the account's, whichever world the dashboard shows. */
function teamAuth(ctx: DashboardContext): AuthContext {
  return { ...ctx.auth, livemode: true, clock: ctx.services.clock };
}

async function members(ctx: DashboardContext, extra: { notice?: string | null; error?: string | null }) {
  const list = await listMembers(ctx.services.db.kysely, teamAuth(ctx));
  return membersPage(
    ctx,
    {
      me: { id: ctx.user.userId, role: ctx.role },
      members: list.members,
      seats: list.seats,
      plan: planOf(ctx.account.plan).name,
    },
    extra,
  );
}

/** A refused change shows the page again with the reason and its status (4xx). */
async function orRefused(
  ctx: DashboardContext,
  reply: { code: (status: number) => unknown },
  run: () => Promise<unknown>,
): Promise<string | null> {
  try {
    await run();
    return null;
  } catch (error) {
    if (error instanceof ApiError && error.status < 500 && error.status !== 404) {
      reply.code(error.status);
      return members(ctx, { error: error.message });
    }
    throw error;
  }
}

/** /dashboard/members: admins and the owner invite people, change roles and remove people. */
export function memberPageRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/members', (ctx, request) =>
    members(ctx, { notice: notices(ctx, request.query.notice) }),
  );

  action(scope, deps, '/dashboard/members', async (ctx, form, request, reply) => {
    const parsed = InviteMemberBody.safeParse({
      email: (form.get('email') ?? '').trim(),
      name: form.get('name') || undefined,
      role: form.get('role') ?? 'member',
    });
    if (!parsed.success) {
      reply.code(400);
      return members(ctx, { error: describeIssues(parsed.error) });
    }
    const refused = await orRefused(ctx, reply, async () => {
      const member = await inviteMember(ctx.services, request.log, teamAuth(ctx), parsed.data);
      await auditUserAction(ctx, 'member.invite', 'member', member.id);
    });
    return refused ?? redirect(reply, '/dashboard/members', 'invited');
  });

  action<IdParams>(scope, deps, '/dashboard/members/:id/role', async (ctx, form, request, reply) => {
    const role = form.get('role');
    if (!isRole(role)) throw new ApiError('invalid_request', 'role: choose owner, admin, member or viewer.');
    const refused = await orRefused(ctx, reply, () =>
      asUserAction(ctx, 'member.role_change', 'member', request.params.id, () =>
        changeMemberRole(ctx.services.db.kysely, teamAuth(ctx), request.params.id, role),
      ),
    );
    return refused ?? redirect(reply, '/dashboard/members', 'saved');
  });

  action<IdParams>(scope, deps, '/dashboard/members/:id/remove', async (ctx, _form, request, reply) => {
    const refused = await orRefused(ctx, reply, () =>
      asUserAction(ctx, 'member.remove', 'member', request.params.id, () =>
        removeMember(ctx.services.db.kysely, teamAuth(ctx), request.params.id),
      ),
    );
    return refused ?? redirect(reply, '/dashboard/members', 'removed');
  });
}
