import { z } from 'zod';
import { ShowIf } from '../../domain/conditions.js';
import { Constraints, ItemDefinition, ItemJsonSchema, ItemOption } from '../../domain/items.js';
import { LanguageTag, optional } from '../../http/schemas.js';
import { ChaseSettingsFields } from './chase-settings.js';
import { CHASE_SCHEDULES, Country, TimeZone } from './intakes.schemas.js';

/**
 * PATCH bodies. A field left out is unchanged. For the fields an intake may lack (due_date,
 * client_brief, folder_id, client name/phone/timezone) `null` removes the value, as in JSON Merge
 * Patch (RFC 7396): a PATCH needs a way to clear, which a create body does not.
 */
const clearable = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

export const UpdateIntakeBody = z
  .strictObject({
    project_name: optional(z.string().trim().min(1).max(200)),
    due_date: clearable(z.iso.date()),
    client: optional(
      z.strictObject({
        name: clearable(z.string().trim().min(1).max(200)),
        phone: clearable(
          z.string().regex(/^\+[1-9]\d{6,14}$/, 'phone must be in E.164 form, e.g. +14155550123'),
        ),
        language: optional(LanguageTag),
        timezone: clearable(TimeZone),
        country: clearable(Country),
      }),
    ),
    chase_schedule: optional(z.enum(CHASE_SCHEDULES)),
    ...ChaseSettingsFields,
    client_brief: clearable(z.string().max(5000)),
    folder_id: clearable(z.string().min(1).max(64)).meta({
      description: 'fld_… from /v1/folders; null unfiles',
    }),
  })
  .meta({
    id: 'UpdateIntake',
    description:
      'Fields left out stay as they are; null clears due_date, client_brief, folder_id and client name, phone, timezone or country. New chase settings or a new due date re-plan the pending reminders from now.',
    examples: [{ due_date: '2026-12-20', chase_schedule: 'gentle', client: { name: 'Dana Smith' } }],
  });

const def = ItemDefinition.shape;
export const UpdateItemBody = z
  .strictObject({
    type: def.type.optional(),
    label: def.label.optional(),
    help: z.string().max(2000).nullable().optional(),
    example: z.string().max(200).nullable().optional(),
    required: z.boolean().optional(),
    // Replaces the constraints as a whole (the schema's own description says so).
    constraints: optional(Constraints),
    schema: ItemJsonSchema.nullable().optional(),
    options: z.array(ItemOption).max(200).nullable().optional(),
    section: z.string().trim().min(1).max(100).nullable().optional(),
    show_if: ShowIf.nullable().optional(),
    discard_submitted_value: z.boolean().optional().meta({
      description:
        "Confirms that the client's answer may be thrown away when it no longer fits the new definition (otherwise 409 item_answer_would_be_discarded).",
    }),
  })
  .meta({
    id: 'UpdateItem',
    description:
      "Fields left out stay as they are; null removes help, example, schema, options, section or show_if. When the client's answer (draft or submitted) would no longer be valid, the change needs discard_submitted_value: true; the item then starts over as pending.",
  });
