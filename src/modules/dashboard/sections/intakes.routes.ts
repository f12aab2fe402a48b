import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { progressOf, type IntakeStatus } from '../../../domain/intake-state.js';
import { INTAKE_STATUSES } from '../../../domain/intake-state.js';
import { isFileType } from '../../../domain/items.js';
import { ApiError } from '../../../http/errors.js';
import { chaseNow } from '../../chases/chases.service.js';
import { signFileUrl } from '../../files/signed-url.js';
import { itemStates } from '../../intakes/intakes.lifecycle.js';
import { definitionOf, filesOfIntake, itemsOfIntakes, listIntakes } from '../../intakes/intakes.service.js';
import {
  archiveIntake,
  deleteIntake,
  getIntake,
  getIntakeStatus,
  requireIntake,
  sendIntake,
} from '../../intakes/intakes.service.js';
import { approveItem, requestRevision } from '../../intakes/review.service.js';
import { thumbnailOf } from '../../portal/thumbnail.js';
import { asUserAction, dashboardContext, type DashboardContext } from '../context.js';
import { eventsOfIntake } from '../../events/events.service.js';
import { intakeDetailPage, intakeListPage, type ItemView } from '../pages/intakes.js';
import { action, notices, page, redirect, type Deps, type Form } from '../routing.js';
import { decisionRoutes } from './decisions.js';

const PAGE_SIZE = 25;
const PREVIEWABLE = /^image\/(png|jpeg|webp|gif|svg\+xml)$/;

type IdParams = { id: string };
type ItemParams = { id: string; key: string };

/** zod's issues as one line a person can act on: "client.email: Invalid email address". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || 'form'}: ${issue.message}`)
    .join('; ');
}

async function itemViews(ctx: DashboardContext, intakeId: string): Promise<ItemView[]> {
  const db = ctx.services.db.kysely;
  const rows = await itemsOfIntakes(db, ctx.world, [intakeId]);
  const files = await filesOfIntake(db, ctx.world, intakeId);
  const now = ctx.services.clock.now().getTime();
  return rows.map((row) => {
    const def = definitionOf(row);
    const mine = files.filter((f) => f.item_key === row.key);
    return {
      key: row.key,
      label: def.label,
      type: def.type,
      status: row.status,
      required: def.required,
      owner: def.assignee === 'owner',
      revisionNote: row.status === 'needs_revision' ? row.revision_note : null,
      submittedAt: row.submitted_at,
      approvedAt: row.approved_at,
      value: row.value_json === null ? null : (JSON.parse(row.value_json) as unknown),
      secret: def.type === 'secret',
      files: isFileType(def.type)
        ? mine.map((f) => ({
            id: f.id,
            name: f.name,
            size: Number(f.size),
            contentType: f.content_type,
            url: signFileUrl(ctx.services.config.baseUrl, ctx.services.config.secretKey, f.id, now).url,
            preview: PREVIEWABLE.test(f.content_type)
              ? `/dashboard/intakes/${intakeId}/items/${row.key}/files/${f.id}/preview`
              : null,
          }))
        : [],
      proposed: def.proposed ? { value: def.proposed.value, rationale: def.proposed.rationale } : null,
    };
  });
}

export function intakePageRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/intakes', async (ctx, request) => {
    const query = request.query;
    const status = (INTAKE_STATUSES as readonly string[]).includes(query.status ?? '')
      ? (query.status ?? '')
      : '';
    const q = (query.q ?? '').slice(0, 200);
    const pageNo = Math.max(1, Math.min(10_000, Number(query.page) || 1));
    const db = ctx.services.db.kysely;
    const found = await listIntakes(db, ctx.world, {
      status: status || undefined,
      text: q.trim() || undefined,
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
      status: r.status as IntakeStatus,
      createdAt: r.created_at,
      progress: progressOf(itemStates(items.filter((i) => i.intake_id === r.id))),
    }));
    return intakeListPage(
      ctx,
      { rows, total: found.total, status, q, page: pageNo, pageSize: PAGE_SIZE },
      notices(ctx, query.notice),
    );
  });

  page<IdParams>(scope, deps, '/dashboard/intakes/:id', async (ctx, request) => {
    const id = request.params.id;
    const intake = await getIntake(ctx.services, ctx.world, id);
    const status = await getIntakeStatus(ctx.services, ctx.world, id);
    const events = await eventsOfIntake(ctx.services.db.kysely, ctx.world, intake.id);
    return intakeDetailPage(
      ctx,
      { intake, status, items: await itemViews(ctx, intake.id), events },
      notices(ctx, request.query.notice),
    );
  });

  scope.get<{ Params: ItemParams & { file_id: string } }>(
    '/dashboard/intakes/:id/items/:key/files/:file_id/preview',
    { schema: { hide: true } },
    async (request, reply) => {
      const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
      if (!ctx) return reply;
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const bytes = await thumbnailOf(ctx.services, intake.id, request.params.key, request.params.file_id);
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

  intakeAction(
    '/dashboard/intakes/:id/items/:key/approve',
    'intake.item_approve',
    (ctx, id, _form, key) => approveItem(ctx.services, ctx.world, id, key ?? ''),
    'approved',
  );
  intakeAction(
    '/dashboard/intakes/:id/items/:key/revision',
    'intake.revision_request',
    (ctx, id, form, key) => {
      const note = (form.get('note') ?? '').trim();
      if (!note || note.length > 2000) {
        throw new ApiError(
          'invalid_request',
          'note: say what the client should change (at most 2,000 characters).',
        );
      }
      return requestRevision(ctx.services, ctx.world, id, key ?? '', note);
    },
    'revision',
  );
  intakeAction(
    '/dashboard/intakes/:id/chase',
    'intake.chase',
    (ctx, id, form) =>
      chaseNow(
        ctx.services,
        ctx.world,
        ctx.account.plan,
        id,
        form.get('channel') === 'sms' ? 'sms' : 'email',
      ),
    'chased',
  );
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
}
