import { z } from 'zod';
import { ItemDefinition, ItemDefinitionRecord } from '../../domain/items.js';
import { PageLimit, Timestamp, optional } from '../../http/schemas.js';

export const CreateTemplateBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  items: z.array(ItemDefinition).min(1).max(100),
});

/** PATCH /v1/templates/:id: a new name, a new item list, or both (intakes made from it keep theirs). */
export const UpdateTemplateBody = z.strictObject({
  name: CreateTemplateBody.shape.name.optional(),
  items: CreateTemplateBody.shape.items.optional(),
});

export const Template = z
  .object({ id: z.string(), name: z.string(), items: z.array(ItemDefinitionRecord), created_at: Timestamp })
  .meta({ id: 'Template' });

export const TemplateListQuery = z.strictObject({
  limit: PageLimit(100, 20),
  starting_after: optional(z.string().min(1).max(64)).meta({
    description:
      'Cursor: the id of the last template of the previous page. Templates older than it are returned.',
  }),
});

export const TemplateList = z.object({ templates: z.array(Template), has_more: z.boolean() }).meta({
  id: 'TemplateList',
  description: 'Newest first. Pass the last template id as starting_after for the next page.',
});
export const TemplateParams = z.strictObject({ id: z.string().min(1).max(64) });
