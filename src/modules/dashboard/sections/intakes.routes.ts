import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { INTAKE_STATUSES, progressOf } from '../../../domain/intake-state.js';
import { chaseNow } from '../../chases/chases.service.js';
import { itemStates } from '../../intakes/intakes.lifecycle.js';
import { itemsOfIntakes, listIntakes } from '../../intakes/intakes.service.js';
import { archiveIntake, deleteIntake, requireIntake, sendIntake } from '../../intakes/intakes.service.js';
import { thumbnailOf } from '../../portal/thumbnail.js';
import { asUserAction, dashboardContext, type DashboardContext } from '../context.js';
import { intakeListPage } from '../pages/intakes.js';
import { action, notices, page, redirect, type Deps, type Form } from '../routing.js';
import { decisionRoutes } from './decisions.js';
import { intakePage } from './intake-view.js';
import { reviewRoutes } from './review.routes.js';

const PAGE_SIZE = 25;

type IdParams = { id: string };
type ItemParams = { id: string; key: string };

/** zod's issues as one line a person can act on: "client.email: Invalid email address". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || 'form'}: ${issue.message}`)
    .join('; ');
}

export function intakePageRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/intakes', async (ctx, request) => {
    const query = request.query;
    const status = INTAKE_STATUSES.find((known) => known === query.status) ?? '';
    const q = (query.q ?? '').slice(0, 200);
    const pageNo = Math.max(1, Math.min(10_000, Number(query.page) || 1));
    const db = ctx.services.db.kysely;
    const found = await listIntakes(db, ctx.world, {
      status: status || undefined,
      text: q.trim() || undefined,
      reviewFirst: true,
      limit: PAGE_SIZE,
      offset: (pageNo - 1) * PAGE_SIZE,
    });
    const items = await itemsOfIntakes(
      db,
      ctx.world,
      found.rows.map((r) => r.id),
    );
    const rows = found.rows.map((r) => ({
      id: r.id,
      projectName: r.project_name,
      clientEmail: r.client_email,
      clientName: r.client_name,
      status: r.status,
      createdAt: r.created_at,
      progress: progressOf(itemStates(items.filter((i) => i.intake_id === r.id))),
      awaitingReview: r.awaiting_review,
    }));
    return intakeListPage(
      ctx,
      { rows, total: found.total, status, q, page: pageNo, pageSize: PAGE_SIZE },
      notices(ctx, query.notice),
    );
  });

  page<IdParams>(scope, deps, '/dashboard/intakes/:id', async (ctx, request) => {
    const notice = notices(ctx, request.query.notice);
    // After an action on one item its notice goes on that item's card, where the page opens.
    const key = request.query.item;
    return key
      ? intakePage(ctx, request.params.id, null, { key, notice })
      : intakePage(ctx, request.params.id, notice);
  });

  scope.get<{ Params: ItemParams & { file_id: string } }>(
    '/dashboard/intakes/:id/items/:key/files/:file_id/preview',
    { schema: { hide: true } },
    async (request, reply) => {
      const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
      if (!ctx) return reply;
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const bytes = await thumbnailOf(
        ctx.services,
        intake.id,
        request.params.key,
        request.params.file_id,
        request.ip,
      );
      return reply.type('image/webp').header('Cache-Control', 'private, max-age=3600').send(bytes);
    },
  );

  const intakeAction = (
    path: string,
    auditAction: string,
    run: (ctx: DashboardContext, id: string, form: Form, key: string | undefined) => Promise<unknown>,
    notice: string,
    after: (id: string) => string = (id) => `/dashboard/intakes/${id}`,
  ) =>
    action<Partial<ItemParams> & IdParams>(scope, deps, path, async (ctx, form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      await asUserAction(ctx, auditAction, 'intake', intake.id, () =>
        run(ctx, intake.id, form, request.params.key),
      );
      return redirect(reply, after(intake.id), notice);
    });

  action<IdParams>(scope, deps, '/dashboard/intakes/:id/chase', async (ctx, form, request, reply) => {
    const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
    const channel = form.get('channel') === 'sms' ? 'sms' : 'email';
    await asUserAction(ctx, 'intake.chase', 'intake', intake.id, () =>
      chaseNow(ctx.services, ctx.world, ctx.account.plan, intake.id, channel),
    );
    // Test mode sends nothing to anyone: say where the message went instead of "sent".
    const notice = ctx.livemode ? 'chased' : channel === 'sms' ? 'chased_test_sms' : 'chased_test';
    return redirect(reply, `/dashboard/intakes/${intake.id}`, notice);
  });
  intakeAction(
    '/dashboard/intakes/:id/send',
    'intake.send',
    (ctx, id) => sendIntake(ctx.services, ctx.world, id),
    'sent',
  );
  intakeAction(
    '/dashboard/intakes/:id/archive',
    'intake.archive',
    (ctx, id) => archiveIntake(ctx.services, ctx.world, id),
    'archived',
  );
  intakeAction(
    '/dashboard/intakes/:id/delete',
    'intake.delete',
    (ctx, id) => deleteIntake(ctx.services, ctx.world, id),
    'deleted',
    () => '/dashboard/intakes',
  );
  decisionRoutes(scope, deps);
  reviewRoutes(scope, deps);
}
