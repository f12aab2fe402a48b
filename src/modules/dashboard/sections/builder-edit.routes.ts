import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../../../http/errors.js';
import { CreateFolderBody } from '../../folders/folders.schemas.js';
import { createFolder, listFoldersOf } from '../../folders/folders.service.js';
import { UpdateIntakeBody, UpdateItemBody } from '../../intakes/editing.schemas.js';
import { deleteItem, updateIntakeSettings, updateItemDefinition } from '../../intakes/editing.service.js';
import { RecipientInput } from '../../intakes/people.schemas.js';
import { AddItemsBody } from '../../intakes/intakes.schemas.js';
import {
  addItems,
  filesOfIntake,
  getIntake,
  itemsOfIntakes,
  requireIntake,
} from '../../intakes/intakes.service.js';
import { addRecipient, reinstateRecipient, removeRecipient } from '../../recipients/recipients.service.js';
import { asUserAction, type DashboardContext } from '../context.js';
import {
  allRowsOf,
  definitionOfRow,
  definitionsOfRows,
  emptyRow,
  rowOfDefinition,
  rowsOf,
  withItemLabels,
  type ItemFormRow,
} from '../item-form.js';
import { editPage, type EditState } from '../pages/builder-edit.js';
import { action, notices, page, type Deps, type Form } from '../routing.js';
import { describeIssues } from './intakes.routes.js';
import { valuesOf } from './builder-values.js';

type IdParams = { id: string };
type ItemParams = { id: string; key: string };

async function renderEdit(
  ctx: DashboardContext,
  id: string,
  state: Partial<EditState>,
  notice: string | null,
  error: string | null,
): Promise<string> {
  const intake = await getIntake(ctx.services, ctx.world, id);
  const { folders } = await listFoldersOf(ctx.services.db.kysely, ctx.world);
  return editPage(
    ctx,
    intake,
    {
      item: null,
      addRows: [emptyRow()],
      addAdded: null,
      ...state,
      folders: folders.map((f) => ({ id: f.id, name: f.name })),
      itemRows: new Map(
        intake.items.map((item) => [item.key, rowOfDefinition({ ...item, assignee: item.assignee })]),
      ),
    },
    notice,
    error,
  );
}

/**
 * PATCH /v1/intakes/:id's body from the details form: only what the owner changed, so saving a new
 * project name does not re-plan the reminders; an emptied field clears the value.
 */
export function settingsBodyOf(
  form: Form,
  current: {
    project_name: string;
    due_date: string | null;
    chase_schedule: string;
    folder_id: string | null;
    client_name: string | null;
    client_phone: string | null;
    client_language: string;
  },
): Record<string, unknown> {
  const text = (name: string) => (form.get(name) ?? '').trim();
  const changed = <T>(given: T, now: T) => (given === now ? undefined : given);
  const client = {
    name: changed(text('client_name') || null, current.client_name),
    phone: changed(text('client_phone').replace(/[\s()/-]/g, '') || null, current.client_phone),
    language: changed(text('client_language') || current.client_language, current.client_language),
  };
  const body = {
    project_name: changed(text('project_name'), current.project_name),
    due_date: changed(text('due_date') || null, current.due_date),
    chase_schedule: changed(text('chase_schedule') || current.chase_schedule, current.chase_schedule),
    folder_id: changed(text('folder_id') || null, current.folder_id),
    client: Object.values(client).some((v) => v !== undefined) ? client : undefined,
  };
  return JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
}

/** PATCH /v1/intakes/:id/items/:key's body from an item card: every field, null where emptied. */
export function itemPatchOf(row: ItemFormRow, discard: boolean): Record<string, unknown> {
  const def = definitionOfRow(row);
  return {
    type: def.type,
    label: def.label,
    help: def.help ?? null,
    example: def.example ?? null,
    required: def.required,
    constraints: def.constraints ?? {},
    schema: def.schema ?? null,
    options: def.options ?? null,
    ...(discard ? { discard_submitted_value: true } : {}),
  };
}

/** Back to the edit page, at the part just saved (the notice before the fragment). */
function savedAt(reply: FastifyReply, id: string, anchor: string): FastifyReply {
  return reply.code(303).header('Location', `/dashboard/intakes/${id}/edit?notice=saved#${anchor}`).send();
}

/** The client's answer to an item, in a few words: the text, a list, the file names, or "a secret". */
async function answerText(ctx: DashboardContext, intakeId: string, key: string): Promise<string> {
  const db = ctx.services.db.kysely;
  const [item] = (await itemsOfIntakes(db, ctx.world, [intakeId])).filter((row) => row.key === key);
  const files = (await filesOfIntake(db, ctx.world, intakeId)).filter((file) => file.item_key === key);
  if (files.length > 0) return files.map((file) => `“${file.name}”`).join(', ');
  if (!item) return '';
  if (item.secret_ciphertext !== null) return ctx.t('builder.a_secret', 'a secret');
  const value = item.value;
  const text =
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : Array.isArray(value)
        ? value.map(String).join(', ')
        : JSON.stringify(value);
  return `“${text.length > 120 ? `${text.slice(0, 119)}…` : text}”`;
}

function failed(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status < 500;
}

export function builderEditRoutes(scope: FastifyInstance, deps: Deps): void {
  page<IdParams>(scope, deps, '/dashboard/intakes/:id/edit', async (ctx, request) =>
    renderEdit(ctx, request.params.id, {}, notices(ctx, request.query.notice), null),
  );

  /** Runs one change as the user; a refused change re-renders the page with what was posted. */
  const change = async (
    ctx: DashboardContext,
    reply: FastifyReply,
    id: string,
    auditAction: string,
    run: () => Promise<unknown>,
    anchor: string,
    onError: Partial<EditState> = {},
    named: (message: string) => string = (message) => message,
  ) => {
    try {
      await asUserAction(ctx, auditAction, 'intake', id, run);
      return savedAt(reply, id, anchor);
    } catch (error) {
      if (!failed(error)) throw error;
      reply.code(error.status);
      return renderEdit(ctx, id, onError, null, named(error.message));
    }
  };

  action<IdParams>(scope, deps, '/dashboard/intakes/:id/edit/settings', async (ctx, form, request, reply) => {
    const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
    const newFolder = (form.get('new_folder') ?? '').trim();
    const folderName = CreateFolderBody.shape.name.safeParse(newFolder);
    if (newFolder !== '' && !folderName.success) {
      reply.code(400);
      return renderEdit(ctx, intake.id, {}, null, `new_folder: ${describeIssues(folderName.error)}`);
    }
    const body = settingsBodyOf(form, intake);
    const parsed = UpdateIntakeBody.safeParse(body);
    if (!parsed.success) {
      reply.code(400);
      return renderEdit(ctx, intake.id, {}, null, describeIssues(parsed.error));
    }
    if (folderName.success && newFolder !== '') {
      // A new folder, made as POST /v1/folders makes it, and the intake filed in it.
      try {
        const folder = await asUserAction(ctx, 'folder.create', 'folder', null, () =>
          createFolder(ctx.services.db.kysely, ctx.world, folderName.data),
        );
        parsed.data.folder_id = folder.id;
      } catch (error) {
        if (!failed(error)) throw error;
        reply.code(error.status);
        return renderEdit(ctx, intake.id, {}, null, error.message);
      }
    }
    return change(
      ctx,
      reply,
      intake.id,
      'intake.update',
      () => updateIntakeSettings(ctx.services, ctx.world, ctx.account.plan, intake.id, parsed.data),
      'settings',
    );
  });

  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/edit/items/:key',
    async (ctx, form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const key = request.params.key;
      const row = allRowsOf(form)[0] ?? emptyRow();
      const posted = { key, row: { ...row, key }, discardQuestion: null };
      const named = (message: string) => withItemLabels(message, [{ key, label: row.label }]);
      const parsed = UpdateItemBody.safeParse(itemPatchOf(row, form.get('discard') === 'on'));
      if (!parsed.success) {
        reply.code(400);
        return renderEdit(ctx, intake.id, { item: posted }, null, named(describeIssues(parsed.error)));
      }
      try {
        await asUserAction(ctx, 'intake.item_update', 'intake', intake.id, () =>
          updateItemDefinition(ctx.services, ctx.world, intake.id, key, parsed.data),
        );
        return savedAt(reply, intake.id, `item-form-${key}`);
      } catch (error) {
        if (!failed(error)) throw error;
        reply.code(error.status);
        if (error.code === 'item_answer_would_be_discarded') {
          const question = ctx.t(
            'builder.discard_reason',
            'After this change the client’s answer would no longer fit: {{answer}}.',
            { answer: await answerText(ctx, intake.id, key) },
          );
          return renderEdit(ctx, intake.id, { item: { ...posted, discardQuestion: question } }, null, null);
        }
        return renderEdit(ctx, intake.id, { item: posted }, null, named(error.message));
      }
    },
  );

  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/edit/items/:key/remove',
    async (ctx, _form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      return change(
        ctx,
        reply,
        intake.id,
        'intake.item_delete',
        () => deleteItem(ctx.services, ctx.world, intake.id, request.params.key),
        'items',
      );
    },
  );

  action<IdParams>(scope, deps, '/dashboard/intakes/:id/edit/items', async (ctx, form, request, reply) => {
    const intake = await getIntake(ctx.services, ctx.world, request.params.id);
    const intent = form.get('intent') ?? 'save';
    const values = valuesOf(form);
    const state: Partial<EditState> = { addRows: values.rows, addAdded: values.added };
    if (intent !== 'save') return renderEdit(ctx, intake.id, state, null, null);
    const items = definitionsOfRows(
      rowsOf(form),
      intake.items.map((i) => i.key),
    );
    const parsed = AddItemsBody.safeParse({ items });
    if (!parsed.success) {
      reply.code(400);
      return renderEdit(ctx, intake.id, state, null, withItemLabels(describeIssues(parsed.error), items));
    }
    return change(
      ctx,
      reply,
      intake.id,
      'intake.items_add',
      () => addItems(ctx.services, ctx.world, intake.id, parsed.data),
      'items',
      state,
      (message) => withItemLabels(message, items),
    );
  });

  action<IdParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/edit/recipients',
    async (ctx, form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const name = (form.get('name') ?? '').trim();
      const parsed = RecipientInput.safeParse({
        email: (form.get('email') ?? '').trim(),
        ...(name ? { name } : {}),
      });
      if (!parsed.success) {
        reply.code(400);
        return renderEdit(ctx, intake.id, {}, null, describeIssues(parsed.error));
      }
      return change(
        ctx,
        reply,
        intake.id,
        'intake.recipient_add',
        () => addRecipient(ctx.services, ctx.world, intake.id, parsed.data),
        'recipients',
      );
    },
  );

  for (const [verb, auditAction] of [
    ['remove', 'intake.recipient_remove'],
    ['reinstate', 'intake.recipient_reinstate'],
  ] as const) {
    action<IdParams>(
      scope,
      deps,
      `/dashboard/intakes/:id/edit/recipients/${verb}`,
      async (ctx, form, request, reply) => {
        const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
        const email = form.get('email') ?? '';
        return change(
          ctx,
          reply,
          intake.id,
          auditAction,
          () =>
            verb === 'remove'
              ? removeRecipient(ctx.services, ctx.world, intake.id, email)
              : reinstateRecipient(ctx.services, ctx.world, intake.id, email),
          'recipients',
        );
      },
    );
  }
}
