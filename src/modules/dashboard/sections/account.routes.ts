import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PLAN_IDS, planOf, rateLimitFor } from '../../../domain/plans.js';
import { formatBytes } from '../../portal/page/format.js';
import { ApiError } from '../../../http/errors.js';
import { PatchAccountBody } from '../../accounts/accounts.schemas.js';
import { updateAccount } from '../../accounts/accounts.service.js';
import { listKeys } from '../../keys/keys.service.js';
import { brandingSettingsOf } from '../../accounts/branding.js';
import { CreateTemplateBody, UpdateTemplateBody } from '../../templates/templates.schemas.js';
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  updateTemplate,
} from '../../templates/templates.service.js';
import { usageRecord } from '../../usage/usage.service.js';
import { asUserAction, dashboardContext, type DashboardContext } from '../context.js';
import { count } from '../layout.js';
import { auditPage, distinctAuditActions } from '../../audit/audit.service.js';
import { intakesPerDay } from '../../intakes/intakes.service.js';
import { definitionsOfRows, emptyRow, rowOfDefinition, rowsOf } from '../item-form.js';
import { auditLogPage, settingsPage, templateFormPage, templatesPage, usagePage } from '../pages/account.js';
import { notificationsBlock } from '../pages/notifications.js';
import { noticeSettingOf } from '../../notices/notices.service.js';
import { notificationRoutes } from './notifications.routes.js';
import { action, notices, page, redirect, sendHtml, type Deps, type Form } from '../routing.js';
import { assertCsrf } from '../../sessions/session.js';
import { describeIssues } from './intakes.routes.js';

type IdParams = { id: string };
const AUDIT_PAGE_SIZE = 50;
const MAX_LOGO_BYTES = 140 * 1024;

function templateBodyOf(form: Form) {
  return { name: form.get('name') ?? '', items: definitionsOfRows(rowsOf(form)) };
}

/** A form's rows plus one empty row to add to (and two more when there are none). */
function withSpareRows(rows: ReturnType<typeof rowsOf>) {
  return [...rows, emptyRow(), ...(rows.length === 0 ? [emptyRow(), emptyRow()] : [])];
}

async function refusedTemplate(
  ctx: DashboardContext,
  reply: FastifyReply,
  id: string | null,
  form: Form,
  run: () => Promise<unknown>,
): Promise<string | FastifyReply> {
  try {
    await run();
    return redirect(reply, '/dashboard/templates', 'saved');
  } catch (error) {
    if (error instanceof ApiError && error.status < 500 && error.status !== 404) {
      reply.code(error.status);
      return templateFormPage(
        ctx,
        { id, name: form.get('name') ?? '', rows: withSpareRows(rowsOf(form)) },
        error.message,
      );
    }
    throw error;
  }
}

function templateRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/templates', async (ctx, request) =>
    templatesPage(
      ctx,
      await listTemplates(ctx.services.db.kysely, ctx.world),
      notices(ctx, request.query.notice),
    ),
  );
  page(scope, deps, '/dashboard/templates/new', (ctx) =>
    Promise.resolve(templateFormPage(ctx, { id: null, name: '', rows: withSpareRows([]) }, null)),
  );
  action(scope, deps, '/dashboard/templates', async (ctx, form, _request, reply) => {
    const parsed = CreateTemplateBody.safeParse(templateBodyOf(form));
    if (!parsed.success) {
      reply.code(400);
      return templateFormPage(
        ctx,
        { id: null, name: form.get('name') ?? '', rows: withSpareRows(rowsOf(form)) },
        describeIssues(parsed.error),
      );
    }
    return refusedTemplate(ctx, reply, null, form, async () => {
      await asUserAction(ctx, 'template.create', 'template', null, () =>
        createTemplate(ctx.services.db.kysely, ctx.world, parsed.data, ctx.services.db.dialect),
      );
    });
  });
  page<IdParams>(scope, deps, '/dashboard/templates/:id', async (ctx, request) => {
    const template = await getTemplate(ctx.services.db.kysely, ctx.world, request.params.id);
    const rows = template.items.map((item) => rowOfDefinition(item));
    return templateFormPage(ctx, { id: template.id, name: template.name, rows: [...rows, emptyRow()] }, null);
  });
  action<IdParams>(scope, deps, '/dashboard/templates/:id', async (ctx, form, request, reply) => {
    const id = request.params.id;
    await getTemplate(ctx.services.db.kysely, ctx.world, id); // 404 before anything else
    const parsed = UpdateTemplateBody.safeParse(templateBodyOf(form));
    if (!parsed.success) {
      reply.code(400);
      return templateFormPage(
        ctx,
        { id, name: form.get('name') ?? '', rows: withSpareRows(rowsOf(form)) },
        describeIssues(parsed.error),
      );
    }
    return refusedTemplate(ctx, reply, id, form, async () => {
      await asUserAction(ctx, 'template.update', 'template', id, () =>
        updateTemplate(ctx.services.db.kysely, ctx.world, id, parsed.data),
      );
    });
  });
  action<IdParams>(scope, deps, '/dashboard/templates/:id/delete', async (ctx, _form, request, reply) => {
    await asUserAction(ctx, 'template.delete', 'template', request.params.id, () =>
      deleteTemplate(ctx.services.db.kysely, ctx.world, request.params.id),
    );
    return redirect(reply, '/dashboard/templates', 'deleted');
  });
}

async function usage(ctx: DashboardContext): Promise<string> {
  const db = ctx.services.db.kysely;
  const now = ctx.world.clock.now();
  const record = await usageRecord(
    db,
    { accountId: ctx.account.id, livemode: ctx.livemode },
    ctx.account.plan,
    now,
  );
  const t = ctx.t;
  const keys = (await listKeys(db, ctx.account.id, !ctx.livemode)).filter(
    (k) => k.livemode === (ctx.livemode ? 1 : 0),
  );
  const realNow = ctx.services.clock.now().getTime();
  const perKey = await Promise.all(
    keys.map(async (k) => ({
      name: `${k.name} (${k.prefix}…)`,
      used: await ctx.services.limiter.used(k.id, realNow),
    })),
  );
  const since = new Date(now.getTime() - 29 * 86_400_000);
  const perDay = await intakesPerDay(db, ctx.world, `${since.toISOString().slice(0, 10)}T00:00:00.000Z`);
  const days = Array.from({ length: 30 }, (_, i) => {
    const day = new Date(since.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    return { day, count: perDay.get(day) ?? 0 };
  });
  return usagePage(ctx, {
    plan: planOf(ctx.account.plan).name,
    planId: ctx.account.plan,
    period: record.period,
    meters: [
      // Counts and sizes with the language's digit grouping: "10,000" / "10.000", "1.5 GB".
      { label: t('usage.intakes', 'Intakes this month'), ...record.intakes, format: (n) => count(ctx, n) },
      {
        label: t('usage.storage', 'Storage'),
        ...record.storage_bytes,
        format: (n) => formatBytes(ctx.lang, n),
      },
      { label: t('usage.sms', 'SMS this month'), ...record.sms_messages, format: (n) => count(ctx, n) },
      { label: t('usage.seats', 'Seats (members)'), ...record.seats, format: (n) => count(ctx, n) },
    ],
    keys: perKey,
    rateLimit: rateLimitFor(ctx.account),
    days,
  });
}

async function settings(ctx: DashboardContext, extra: { notice?: string | null; error?: string | null }) {
  const db = ctx.services.db.kysely;
  const branding = await brandingSettingsOf(db, ctx.account.id);
  return settingsPage(
    ctx,
    {
      name: ctx.account.name,
      language: ctx.account.default_language,
      logoUrl: branding.logo_url,
      accent: branding.accent_color,
      brandingAllowed: planOf(ctx.account.plan).features.custom_branding,
      brandingPlan: PLAN_IDS.map(planOf).find((plan) => plan.features.custom_branding)?.name ?? '',
      notifications: notificationsBlock(ctx, await noticeSettingOf(db, ctx.account.id, ctx.user)),
    },
    extra,
  );
}

/** The settings form is multipart (it carries the logo): fields and the one file, size-capped. */
async function readSettingsForm(
  request: FastifyRequest,
): Promise<{ fields: Form; logo: { type: string; bytes: Buffer } | null }> {
  const fields = new URLSearchParams();
  let logo: { type: string; bytes: Buffer } | null = null;
  for await (const part of request.parts({ limits: { fileSize: MAX_LOGO_BYTES, files: 1, fields: 20 } })) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      if (part.file.truncated) throw new ApiError('payload_too_large', 'The logo is larger than 140 KB.');
      if (bytes.length > 0) logo = { type: part.mimetype, bytes };
    } else {
      fields.append(part.fieldname, String(part.value));
    }
  }
  return { fields, logo };
}

export function accountRoutes(scope: FastifyInstance, deps: Deps): void {
  templateRoutes(scope, deps);
  notificationRoutes(scope, deps, (ctx, error) => settings(ctx, { error }));
  page(scope, deps, '/dashboard/usage', (ctx) => usage(ctx));

  page(scope, deps, '/dashboard/audit', async (ctx, request) => {
    const db = ctx.services.db.kysely;
    const action = (request.query.action ?? '').slice(0, 100);
    const actor = ['api_key', 'user', 'client', 'system'].includes(request.query.actor ?? '')
      ? (request.query.actor ?? '')
      : '';
    const pageNo = Math.max(1, Math.min(10_000, Number(request.query.page) || 1));
    const found = await auditPage(db, ctx.world, {
      action: action || undefined,
      actorType: actor || undefined,
      limit: AUDIT_PAGE_SIZE,
      offset: (pageNo - 1) * AUDIT_PAGE_SIZE,
    });
    return auditLogPage(ctx, {
      rows: found.rows,
      actions: await distinctAuditActions(db, ctx.world),
      action,
      actor,
      page: pageNo,
      hasMore: found.hasMore,
    });
  });

  page(scope, deps, '/dashboard/settings', (ctx, request) =>
    settings(ctx, { notice: notices(ctx, request.query.notice) }),
  );

  scope.post('/dashboard/settings', { schema: { hide: true } }, async (request, reply) => {
    if (!request.isMultipart())
      throw new ApiError('unsupported_media_type', 'The settings form is sent as multipart/form-data.');
    const { fields, logo } = await readSettingsForm(request);
    assertCsrf(request, fields.get('_csrf'));
    const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
    if (!ctx) return reply;
    const allowed = planOf(ctx.account.plan).features.custom_branding;
    const branding = allowed
      ? {
          ...(logo ? { logo_url: `data:${logo.type};base64,${logo.bytes.toString('base64')}` } : {}),
          ...(fields.get('remove_logo') === 'on' ? { logo_url: null } : {}),
          // The colour picker always sends a colour: only a changed one becomes the portal's accent.
          ...(fields.get('accent_color') && fields.get('accent_color') !== fields.get('accent_before')
            ? { accent_color: fields.get('accent_color') }
            : {}),
        }
      : undefined;
    const parsed = PatchAccountBody.safeParse({
      name: fields.get('name') ?? undefined,
      default_language: fields.get('default_language') ?? undefined,
      ...(branding ? { branding } : {}),
    });
    if (!parsed.success)
      return sendHtml(reply, 400, await settings(ctx, { error: describeIssues(parsed.error) }));
    await asUserAction(ctx, 'account.update', 'account', ctx.account.id, () =>
      updateAccount(ctx.services.db.kysely, ctx.services.clock, ctx.auth, parsed.data),
    );
    return redirect(reply, '/dashboard/settings', 'saved');
  });
}
