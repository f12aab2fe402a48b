import { z } from 'zod';
import { PageLimit, Timestamp, optional } from '../../http/schemas.js';

export const AuditEntry = z
  .object({
    id: z.string(),
    action: z.string().meta({ examples: ['api_key.create'] }),
    resource_type: z.string(),
    resource_id: z.string().nullable(),
    actor: z.object({ type: z.enum(['api_key', 'user', 'client', 'system']), id: z.string().nullable() }),
    person_id: z.string().nullable().meta({
      description:
        'The member behind the actor: the signed-in person, or the person who made (or approved) the API key. Null for the keys `accounts create` prints, clients and the system.',
    }),
    request_id: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'AuditEntry' });

export const AuditQuery = z.strictObject({
  limit: PageLimit(100, 20),
  starting_after: optional(z.string().min(1)).meta({
    description: 'Cursor: the id of the last entry of the previous page. Entries older than it are returned.',
  }),
});

export const AuditPage = z.object({ entries: z.array(AuditEntry), has_more: z.boolean() }).meta({
  id: 'AuditPage',
  description: 'Newest first. Pass the last entry id as starting_after for the next page.',
});
