import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { describeProblems, requestProblems, type ItemDefinition } from '../../domain/items.js';
import { planOf } from '../../domain/plans.js';
import { ApiError, invalid, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import type { World } from '../../kernel/world.js';
import type {
  CreateTemplateBody,
  Template,
  TemplateList,
  TemplateListQuery,
  UpdateTemplateBody,
} from './templates.schemas.js';
import {
  countTemplatesForCreation,
  deleteTemplateRow,
  findTemplate,
  insertTemplate,
  templatePage,
  templatesOf,
  updateTemplateRow,
  type TemplateRecord,
} from './templates.repository.js';

function toTemplate(record: TemplateRecord): z.infer<typeof Template> {
  return { id: record.id, name: record.name, items: record.items, created_at: record.created_at };
}

/**
 * The plan caps the templates of a world (`max_templates`): each is up to 100 items with their
 * schemas, so an unbounded number would let one account fill the database. 402 plan_required beyond
 * it, as for webhook endpoints and keys. Call inside the creating transaction.
 */
async function assertPlanAllowsAnotherTemplate(
  db: Kysely<Database>,
  world: World,
  dialect: 'sqlite' | 'postgres',
): Promise<void> {
  const { plan: planId, count: used } = await countTemplatesForCreation(db, world, dialect);
  const plan = planOf(planId ?? 'free');
  const limit = plan.features.max_templates;
  if (used >= limit) {
    throw new ApiError(
      'plan_required',
      `The ${plan.name} plan allows ${limit} templates per mode, and ${used} exist; delete one or upgrade the plan.`,
      { limit },
    );
  }
}

export async function createTemplate(
  db: Kysely<Database>,
  world: World,
  body: z.output<typeof CreateTemplateBody>,
  dialect: 'sqlite' | 'postgres',
): Promise<z.infer<typeof Template>> {
  const problems = requestProblems(body.items, compileJsonSchema);
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
    await assertPlanAllowsAnotherTemplate(trx, world, dialect);
    await insertTemplate(trx, record);
    await auditInTransaction(trx, record.id);
  });
  return toTemplate(record);
}

/** Every template of the world, newest first (the dashboard; at most the plan's max_templates). */
export async function listTemplates(db: Kysely<Database>, world: World): Promise<z.infer<typeof Template>[]> {
  return (await templatesOf(db, world)).map(toTemplate);
}

/** GET /v1/templates: one page, newest first; `starting_after` is the last id of the previous page. */
export async function listTemplatePage(
  db: Kysely<Database>,
  world: World,
  query: z.output<typeof TemplateListQuery>,
): Promise<z.infer<typeof TemplateList>> {
  const page = await templatePage(db, world, {
    limit: query.limit,
    startingAfter: query.starting_after,
  });
  if (!page) throw invalid(`starting_after: no template with id ${query.starting_after ?? ''}.`);
  return { templates: page.slice(0, query.limit).map(toTemplate), has_more: page.length > query.limit };
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
    const problems = requestProblems(body.items, compileJsonSchema);
    if (problems.length > 0) throw new ApiError('unprocessable', describeProblems(problems));
  }
  await db.transaction().execute(async (trx) => {
    const changes = { name: body.name, items: body.items };
    // Another world's template is not found: no entry for a change that did not happen.
    if (await updateTemplateRow(trx, world, id, changes)) await auditInTransaction(trx);
  });
  return getTemplate(db, world, id);
}
