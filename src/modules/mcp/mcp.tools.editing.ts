import { z } from 'zod';
import type { FollowUp } from '../../domain/follow-up.js';
import {
  CreateFolderBody,
  Folder,
  FolderList,
  FolderParams,
  UpdateFolderBody,
} from '../folders/folders.schemas.js';
import { UpdateIntakeBody, UpdateItemBody } from '../intakes/editing.schemas.js';
import { Intake, IntakeItem, IntakeItemParams, IntakeParams } from '../intakes/intakes.schemas.js';
import { DESTRUCTIVE, INTERNAL_WRITE, READ_ONLY } from './mcp.annotations.js';
import { defineTool, type ToolSpec } from './mcp.executor.js';
import { ID_ALIAS } from './mcp.guidance.js';
import { listed } from './mcp.summaries.js';

/*
 * Agent tools for editing after sending and for folders: one REST endpoint each, their arguments
 * built from the routes' own schemas (path parameters under their REST names plus the body).
 */

const intakeId = IntakeParams.shape.id.describe(
  `The intake's id, from define_intake or list_intakes. ${ID_ALIAS}`,
);
const itemKey = IntakeItemParams.shape.key.describe('The item key within the intake, e.g. logo.');
const folderId = FolderParams.shape.id.describe('The folder id (fld_…), from list_folders or create_folder.');

/** The define_intake summary's last sentence: how to follow up. */
export function followUpSummary(followUp: FollowUp | undefined): string {
  if (!followUp) return '';
  if (followUp.recommended === 'webhook') {
    return ` Follow up: your webhook endpoint${followUp.webhook.active_endpoints === 1 ? '' : 's'} will be called (${listed(followUp.webhook.events)}); no need to poll.`;
  }
  return ` Follow up: no webhook is registered. Better: register one with ${followUp.webhook.register_with} (action create, events ${listed(followUp.webhook.events)}; admin scope). Otherwise check get_intake_status every ${followUp.schedule.every_hours} hours until ${followUp.schedule.until}.`;
}

export const EDITING_TOOLS: readonly ToolSpec[] = [
  defineTool({
    name: 'update_intake',
    title: 'Change an intake',
    description: [
      'Change an intake after creating it: project_name, due_date, client (name, phone, language, timezone), chase_schedule and the other chase settings, client_brief (shown to the client above the items), folder_id. Fields left out stay as they are; null clears due_date, client_brief, folder_id and client name, phone or timezone.',
      'New chase settings, a new due date or a new time zone re-plan the pending reminders from now. Nothing is emailed by the change itself. Refused (conflict) for an archived intake.',
    ].join('\n\n'),
    method: 'PATCH',
    path: '/v1/intakes/:intake_id',
    input: z.strictObject({ intake_id: intakeId, ...UpdateIntakeBody.shape }),
    output: Intake,
    // Replaces values; null clears due_date, client_brief, folder_id and client fields.
    annotations: { ...DESTRUCTIVE, idempotentHint: true },
    summarize: (r) =>
      `Intake ${r.intake_id} "${r.project_name}" updated: due ${r.due_date ?? 'none'}, reminders ${r.chase_schedule}${r.folder_id ? `, in folder ${r.folder_id}` : ''}.`,
  }),
  defineTool({
    name: 'update_item',
    title: "Change an item's definition",
    description: [
      "Change one item's type, label, help, required flag, constraints (replaced as a whole), schema or options. The key cannot change.",
      "When the client's answer (a draft or a submission) would no longer be valid under the new definition the call fails with item_answer_would_be_discarded and says why; ask the user before repeating it with discard_submitted_value: true, which throws the answer away and sets the item back to pending.",
    ].join('\n\n'),
    method: 'PATCH',
    path: '/v1/intakes/:intake_id/items/:item_key',
    input: z.strictObject({ intake_id: intakeId, item_key: itemKey, ...UpdateItemBody.shape }),
    output: IntakeItem,
    // Replaces the definition; with discard_submitted_value it throws the client's answer away.
    annotations: DESTRUCTIVE,
    summarize: (r) => `Item ${r.key} (${r.type}) is now "${r.label}", status ${r.status}.`,
  }),
  defineTool({
    name: 'delete_item',
    title: 'Remove an item',
    description:
      'Remove an item the client has not submitted yet (a draft of theirs is discarded). A submitted, approved or decided item cannot be removed (conflict): change it with update_item instead. An intake keeps at least one item.',
    method: 'DELETE',
    path: '/v1/intakes/:intake_id/items/:item_key',
    input: z.strictObject({ intake_id: intakeId, item_key: itemKey }),
    annotations: DESTRUCTIVE,
    summarize: (_r, { args }) => `Item ${String(args.item_key)} was removed from ${String(args.intake_id)}.`,
  }),
  defineTool({
    name: 'list_folders',
    title: 'List folders',
    description:
      "The folders that group this account's intakes, by name, with how many intakes each holds. list_intakes with folder_id lists one folder's intakes; q searches project, client name and email.",
    method: 'GET',
    path: '/v1/folders',
    input: z.strictObject({}),
    output: FolderList,
    annotations: READ_ONLY,
    summarize: (r) =>
      r.folders.length === 0
        ? 'No folders yet.'
        : `${r.folders.length} folders: ${listed(r.folders.map((f) => `${f.id} "${f.name}" (${f.intake_count})`))}.`,
  }),
  defineTool({
    name: 'create_folder',
    title: 'Create a folder',
    description:
      'Create a folder to file intakes in (define_intake or update_intake with folder_id). Names are unique per account (case-insensitive): a duplicate is a conflict whose error names the existing folder.',
    method: 'POST',
    path: '/v1/folders',
    input: CreateFolderBody,
    output: Folder,
    annotations: INTERNAL_WRITE,
    summarize: (r) => `Folder ${r.id} "${r.name}" created.`,
  }),
  defineTool({
    name: 'rename_folder',
    title: 'Rename a folder',
    description:
      'Give a folder a new name (unique per account, case-insensitive); the intakes filed in it stay there.',
    method: 'PATCH',
    path: '/v1/folders/:folder_id',
    input: z.strictObject({ folder_id: folderId, ...UpdateFolderBody.shape }),
    output: Folder,
    // The old name is replaced.
    annotations: { ...DESTRUCTIVE, idempotentHint: true },
    summarize: (r) => `Folder ${r.id} is now "${r.name}" (${r.intake_count} intakes).`,
  }),
  defineTool({
    name: 'delete_folder',
    title: 'Delete a folder',
    description: 'Delete a folder. Its intakes are kept, unfiled; nothing else changes.',
    method: 'DELETE',
    path: '/v1/folders/:folder_id',
    input: z.strictObject({ folder_id: folderId }),
    annotations: DESTRUCTIVE,
    summarize: (_r, { args }) => `Folder ${String(args.folder_id)} deleted; its intakes are unfiled.`,
  }),
];
