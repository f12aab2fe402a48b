import { z } from 'zod';
import { INTAKE_STATUSES } from '../../domain/intake-state.js';
import { Timestamp } from '../../http/schemas.js';
import { FileRecord } from '../files/files.schemas.js';
import { BriefFile } from '../intakes/brief-files.schemas.js';
import { ClientComment } from '../comments/comments.schemas.js';
import { ItemBasics, TimeZone } from '../intakes/intakes.schemas.js';

/** Uploaded files in the portal: the shared file record. */
export const PortalFile = FileRecord;

export const PortalItem = ItemBasics.extend({
  value: z.unknown().meta({ description: 'The saved value; never shown for secret items' }),
  secret_saved: z
    .boolean()
    .meta({ description: 'Secret items: whether a value is saved (it is never shown back)' }),
  files: z.array(PortalFile),
  saved_at: Timestamp.nullable(),
  submitted_at: Timestamp.nullable(),
}).meta({ id: 'PortalItem' });

export const PortalView = z
  .object({
    intake_id: z.string(),
    project_name: z.string(),
    client_name: z.string().nullable(),
    language: z.string(),
    due_date: z.string().nullable(),
    status: z.enum(INTAKE_STATUSES),
    brief: z.string().nullable(),
    brief_files: z
      .array(BriefFile)
      .meta({ description: 'Files the sender attached to the brief, with signed download URLs (24 hours)' }),
    progress: z.object({
      submitted: z.number(),
      total: z.number(),
      outstanding: z.number(),
      percent: z.number(),
    }),
    items: z.array(PortalItem).meta({
      description:
        'The items that apply given the answers so far (an item whose show_if does not hold is left out)',
    }),
    comments: z.array(ClientComment).meta({
      description:
        'Both sides of the conversations on the items listed, oldest first (item_key says which item)',
    }),
  })
  .meta({ id: 'PortalView' });

export const PortalParams = z.strictObject({ intake_id: z.string().min(1).max(64) });
export const PortalItemParams = z.strictObject({
  intake_id: z.string().min(1).max(64),
  key: z.string().min(1).max(64),
});
export const PortalFileParams = PortalItemParams.extend({ file_id: z.string().min(1).max(64) });
export const SaveBody = z.strictObject({ value: z.unknown() });

export const SubmitAllResult = z
  .object({
    submitted: z.array(z.string()).meta({ description: 'Items this call sent for review' }),
    still_needed: z.array(z.string()).meta({
      description:
        'Items still needed from the client: required items not sent, and items sent back for changes',
    }),
    invalid: z
      .array(z.object({ item_key: z.string(), message: z.string() }))
      .meta({ description: 'Saved answers that break a constraint: not sent, with the reason' }),
  })
  .meta({ id: 'PortalSubmitAllResult' });

export const TimezoneBody = z.strictObject({ timezone: TimeZone });
