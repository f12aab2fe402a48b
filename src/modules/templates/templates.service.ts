import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { definitionProblems, describeProblems, type ItemDefinition } from '../../domain/items.js';
import { ApiError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { World } from '../../kernel/world.js';
import type { CreateTemplateBody, Template, UpdateTemplateBody } from './templates.schemas.js';
import {
  deleteTemplateRow,
  findTemplate,
  insertTemplate,
  templatesOf,
  updateTemplateRow,
  type TemplateRecord,
} from './templates.repository.js';

function toTemplate(record: TemplateRecord): z.infer<typeof Template> {
  return { id: record.id, name: record.name, items: record.items, created_at: record.created_at };
}

export async function createTemplate(
  db: Kysely<Database>,
  world: World,
  body: z.output<typeof CreateTemplateBody>,
): Promise<z.infer<typeof Template>> {
  const problems = definitionProblems(body.items, compileJsonSchema);
  if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
  const record: TemplateRecord = {
    id: newId('tmpl'),
    account_id: world.accountId,
    livemode: world.livemode ? 1 : 0,
    name: body.name,
    items: body.items,
    created_at: world.clock.now().toISOString(),
  };
  await db.transaction().execute(async (trx) => {
    await insertTemplate(trx, record);
    await auditInTransaction(trx, record.id);
  });
  return toTemplate(record);
}

export async function listTemplates(db: Kysely<Database>, world: World): Promise<z.infer<typeof Template>[]> {
  return (await templatesOf(db, world)).map(toTemplate);
}

export async function getTemplate(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<z.infer<typeof Template>> {
  const record = await findTemplate(db, world, id);
  if (!record) throw notFound('template', id);
  return toTemplate(record);
}

/** The items a template gives a new intake; 404 when it is not this world's template. */
export async function findTemplateItems(
  db: Kysely<Database>,
  world: World,
  id: string,
): Promise<ItemDefinition[]> {
  const record = await findTemplate(db, world, id);
  if (!record) throw notFound('template', id);
  return record.items;
}

export async function deleteTemplate(db: Kysely<Database>, world: World, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!(await deleteTemplateRow(trx, world, id))) throw notFound('template', id);
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
  await db.transaction().execute(async (trx) => {
    const changes = { name: body.name, items: body.items };
    // Another world's template is not found: no entry for a change that did not happen.
    if (await updateTemplateRow(trx, world, id, changes)) await auditInTransaction(trx);
  });
  return getTemplate(db, world, id);
}
