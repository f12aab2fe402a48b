import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../http/errors.js';
import { CreateIntakeBody } from '../../intakes/intakes.schemas.js';
import { createIntake } from '../../intakes/intakes.service.js';
import { STARTER_TEMPLATES, starterItems, starterSummary } from '../../templates/templates.starters.js';
import { getTemplate, listTemplates } from '../../templates/templates.service.js';
import { asUserAction, type DashboardContext } from '../context.js';
import {
  definitionsOfRows,
  emptyRow,
  rowOfDefinition,
  withItemLabels,
  type ItemFormRow,
} from '../item-form.js';
import { ItemDefinition } from '../../../domain/items.js';
import { builderPage, type BuilderValues, type StartChoice } from '../pages/builder.js';
import { blankValues, valuesOf } from './builder-values.js';
import { action, page, redirect, type Deps } from '../routing.js';
import { describeIssues } from './intakes.routes.js';
import { builderEditRoutes } from './builder-edit.routes.js';
import { builderPreviewRoutes, sendPreview } from './builder-preview.routes.js';
import { unsavedPreviewModel } from '../../portal/page/page.service.js';

/** What the page offers to start from: the ready-made templates, then the account's own. */
async function startChoices(
  ctx: DashboardContext,
): Promise<{ starters: StartChoice[]; saved: StartChoice[] }> {
  const saved = await listTemplates(ctx.services.db.kysely, ctx.world);
  return {
    starters: STARTER_TEMPLATES.map((s) => {
      const summary = starterSummary(s, ctx.lang);
      return {
        href: `/dashboard/intakes/new?start=${s.id}`,
        name: summary.name,
        description: summary.description,
      };
    }),
    saved: saved.map((tpl) => ({
      href: `/dashboard/intakes/new?template=${encodeURIComponent(tpl.id)}`,
      name: tpl.name,
      description: ctx.t('builder.saved_template', 'Your template · {{count}} items', {
        count: tpl.items.length,
      }),
    })),
  };
}

/** The API's CreateIntake body from the builder (the schema checks it next). */
function createBodyOf(
  values: BuilderValues,
): { items?: Record<string, unknown>[] } & Record<string, unknown> {
  const blank = (v: string) => (v.trim() === '' ? undefined : v.trim());
  const rows = values.rows.filter((r) => r.label.trim() || r.key.trim());
  return {
    project_name: values.project_name,
    client: {
      email: values.client_email.trim(),
      name: blank(values.client_name),
      language: blank(values.client_language),
      phone: blank(values.client_phone)?.replace(/[\s()/-]/g, ''),
    },
    ...(values.source === 'template'
      ? { template_id: blank(values.template_id) ?? '' }
      : { items: definitionsOfRows(rows) }),
    chase_schedule: values.chase_schedule,
    due_date: blank(values.due_date),
    client_brief: blank(values.client_brief),
    send: values.send,
  };
}

/** The cards of a template's items (ready-made or the account's own). */
async function startingRows(
  ctx: DashboardContext,
  query: Record<string, string | undefined>,
): Promise<{ rows: ItemFormRow[]; from: string | null }> {
  if (query.start) {
    const starter = STARTER_TEMPLATES.find((s) => s.id === query.start);
    const items = starter ? starterItems(starter.id, ctx.lang) : undefined;
    if (starter && items) {
      return {
        rows: items.map((item) => rowOfDefinition(ItemDefinition.parse(item))),
        from: starterSummary(starter, ctx.lang).name,
      };
    }
  }
  if (query.template) {
    const template = await getTemplate(ctx.services.db.kysely, ctx.world, query.template);
    return { rows: template.items.map(rowOfDefinition), from: template.name };
  }
  return { rows: [emptyRow()], from: null };
}

/** The new-intake builder (GET, the no-script round trips, and creation), preview and editing. */
export function builderRoutes(scope: FastifyInstance, deps: Deps): void {
  page(scope, deps, '/dashboard/intakes/new', async (ctx, request) => {
    const start = await startingRows(ctx, request.query);
    return builderPage(
      ctx,
      { ...(await startChoices(ctx)), values: blankValues(start.rows, start.from) },
      null,
    );
  });

  action(scope, deps, '/dashboard/intakes', async (ctx, form, _request, reply) => {
    const values = valuesOf(form);
    const intent = form.get('intent') ?? '';
    const choices = await startChoices(ctx);
    if (intent !== '' && intent !== 'draft' && intent !== 'send')
      return builderPage(ctx, { ...choices, values }, null);
    const body = createBodyOf(values);
    const named = (message: string) => withItemLabels(message, body.items ?? []);
    const parsed = CreateIntakeBody.safeParse(body);
    if (!parsed.success) {
      reply.code(400);
      return builderPage(ctx, { ...choices, values }, named(describeIssues(parsed.error)));
    }
    try {
      const outcome = await asUserAction(ctx, 'intake.create', 'intake', null, () =>
        createIntake(ctx.services, ctx.world, ctx.account.plan, ctx.user.userId, parsed.data, undefined),
      );
      const id = outcome.value.intake_id;
      return intent === 'draft'
        ? redirect(reply, `/dashboard/intakes/${id}/preview`, 'created')
        : redirect(reply, `/dashboard/intakes/${id}`, values.send ? 'sent' : 'created');
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) {
        reply.code(error.status);
        return builderPage(ctx, { ...choices, values }, named(error.message));
      }
      throw error;
    }
  });

  // The unsaved cards as the client would see them, in a new tab: nothing is created or written.
  action(scope, deps, '/dashboard/intakes/preview', async (ctx, form, _request, reply) => {
    const values = valuesOf(form);
    const rows = values.rows.filter((r) => r.label.trim() !== '' || r.key.trim() !== '');
    const items = definitionsOfRows(rows).flatMap((def) => {
      const parsed = ItemDefinition.safeParse(def);
      return parsed.success ? [parsed.data] : [];
    });
    const blank = (v: string) => (v.trim() === '' ? null : v.trim());
    const model = await unsavedPreviewModel(ctx.services, ctx.account.id, {
      projectName: blank(values.project_name) ?? ctx.t('intakes.new', 'New intake'),
      clientName: blank(values.client_name),
      language: blank(values.client_language) ?? ctx.account.default_language,
      dueDate: /^\d{4}-\d{2}-\d{2}$/.test(values.due_date) ? values.due_date : null,
      brief: blank(values.client_brief),
      items,
    });
    return sendPreview(reply, model);
  });

  builderPreviewRoutes(scope, deps);
  builderEditRoutes(scope, deps);
}
