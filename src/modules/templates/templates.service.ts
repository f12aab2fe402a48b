import type { Kysely, Selectable } from 'kysely';
import type { z } from 'zod';
import type { Database, TemplatesTable } from '../../db/schema.js';
import { definitionProblems, describeProblems, type ItemDefinition } from '../../domain/items.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { World } from '../../kernel/world.js';
import type { CreateTemplateBody, Template, UpdateTemplateBody } from './templates.schemas.js';

type TemplateRow = Selectable<TemplatesTable>;

function toTemplate(row: TemplateRow): z.infer<typeof Template> {
  return {
    id: row.id,
    name: row.name,
    items: JSON.parse(row.items) as ItemDefinition[],
    created_at: row.created_at,
  };
}

function inWorld(db: Kysely<Database>, world: World) {
  return db
    .selectFrom('templates')
    .selectAll()
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0);
}

export async function createTemplate(
  db: Kysely<Database>,
  world: World,
  body: z.output<typeof CreateTemplateBody>,
): Promise<z.infer<typeof Template>> {
  const problems = definitionProblems(body.items, compileJsonSchema);
  if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
  const row: TemplateRow = {
    id: newId('tmpl'),
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    name: body.name,
    items: JSON.stringify(body.items),
    created_at: world.clock.now().toISOString(),
  };
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('templates').values(row).execute();
    await auditInTransaction(trx, row.id);
  });
  return toTemplate(row);
}

export async function listTemplates(db: Kysely<Database>, world: World): Promise<z.infer<typeof Template>[]> {
  const rows = await inWorld(db, world).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(toTemplate);
}

export async function getTemplate(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<z.infer<typeof Template>> {
  const row = await inWorld(db, world).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('template', id);
  return toTemplate(row);
}

/** The items a template gives a new intake; 404 when it is not this world's template. */
export async function findTemplateItems(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<ItemDefinition[]> {
  const row = await inWorld(db, world).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('template', id);
  return JSON.parse(row.items) as ItemDefinition[];
}

export async function deleteTemplate(db: Kysely<Database>, world: World, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const result = await trx
      .deleteFrom('templates')
      .where('id', '=', id)
      .where('account_id', '=', world.accountId)
      .where('livemode', '=', world.livemode ? 1 : 0)
      .executeTakeFirst();
    if (result.numDeletedRows === 0n) throw notFound('template', id);
    await auditInTransaction(trx);
  });
}

/** Renames a template or replaces its items, checked as at creation; 404 when it is not this world's. */
export async function updateTemplate(
  db: Kysely<Database>,
  world: World,
  id: string,
  body: z.output<typeof UpdateTemplateBody>,
): Promise<z.infer<typeof Template>> {
  if (body.items) {
    const problems = definitionProblems(body.items, compileJsonSchema);
    if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
  }
  const changes = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.items !== undefined ? { items: JSON.stringify(body.items) } : {}),
  };
  await db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('templates')
      .set({ ...changes, id })
      .where('id', '=', id)
      .where('account_id', '=', world.accountId)
      .where('livemode', '=', world.livemode ? 1 : 0)
      .executeTakeFirst();
    // Another world's template is not found: no entry for a change that did not happen.
    if (result.numUpdatedRows > 0n) await auditInTransaction(trx);
  });
  return getTemplate(db, world, id);
}
