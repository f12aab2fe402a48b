import type { FastifyInstance } from 'fastify';
import { NoticeSettingForm } from '../../notices/notices.schemas.js';
import { saveNoticeSetting } from '../../notices/notices.service.js';
import { asUserAction, type DashboardContext } from '../context.js';
import { action, redirect, type Deps } from '../routing.js';
import { describeIssues } from './intakes.routes.js';

/** The settings page's Notifications form: the signed-in person's own choice. */
export function notificationRoutes(
  scope: FastifyInstance,
  deps: Deps,
  settingsWithError: (ctx: DashboardContext, error: string) => Promise<string>,
): void {
  action(scope, deps, '/dashboard/settings/notifications', async (ctx, form, _request, reply) => {
    const parsed = NoticeSettingForm.safeParse({
      frequency: form.get('frequency') ?? undefined,
      time_zone: form.get('time_zone') || null,
    });
    if (!parsed.success) {
      reply.code(400);
      return settingsWithError(ctx, describeIssues(parsed.error));
    }
    await asUserAction(ctx, 'user.notifications_update', 'user', ctx.user.userId, () =>
      saveNoticeSetting(ctx.services, ctx.account.id, ctx.user.email, {
        frequency: parsed.data.frequency,
        timeZone: parsed.data.time_zone,
      }),
    );
    // The notice in the query, the fragment last: the browser lands on this block.
    return redirect(reply, '/dashboard/settings?notice=saved#notifications');
  });
}
