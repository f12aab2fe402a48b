/**
 * The people of an intake besides its client: who may be added at creation (also_notify) and how the
 * intake shows them. The recipients module manages them after creation.
 */
import { z } from 'zod';
import { Timestamp, optional } from '../../http/schemas.js';

/** At most this many also_notify recipients per intake (besides the client). */
export const MAX_RECIPIENTS = 10;

export const RecipientInput = z
  .strictObject({
    email: z.email().max(254),
    name: optional(z.string().trim().min(1).max(200)),
  })
  .meta({ description: 'A person who gets the intake emails besides the client' });

export const AlsoNotify = z
  .array(RecipientInput)
  .max(MAX_RECIPIENTS)
  .meta({
    description: `Up to ${MAX_RECIPIENTS} more people who get the portal link and their own reminders, each in their own email (nobody sees the other addresses). Not the client's address, no duplicates (422).`,
  });

export const Recipient = z
  .object({
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(['client', 'also_notify']).meta({
      description: 'client: the intake’s client (cannot be removed); also_notify: added besides them',
    }),
    opted_out_at: Timestamp.nullable().meta({
      description: "When they used a reminder's opt-out link: no more reminders to them",
    }),
    suppressed: z.boolean().meta({
      description: 'The address hard-bounced or reported spam: nothing is sent to it until reinstated',
    }),
    stalled_at: Timestamp.nullable().meta({
      description:
        'Three of their reminder emails in a row bounced: their reminders stopped (reinstate resumes them)',
    }),
    added_at: Timestamp,
  })
  .meta({ id: 'Recipient' });
