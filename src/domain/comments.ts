import { z } from 'zod';

/**
 * The shape of a comment on an item. It sits below the modules because two of them carry it: the
 * comments module writes and lists comments, and an intake's results (the intakes module, below
 * comments) give each item's conversation with its answer.
 */

export const COMMENT_AUTHORS = ['owner', 'client'] as const;
export type CommentAuthor = (typeof COMMENT_AUTHORS)[number];

/** Who acted, in the audit log's words: a person in the dashboard, an API key (or agent), the client. */
export const COMMENT_ACTOR_TYPES = ['client', 'user', 'api_key', 'system'] as const;
export type CommentActorType = (typeof COMMENT_ACTOR_TYPES)[number];

export function isCommentActorType(value: string): value is CommentActorType {
  return (COMMENT_ACTOR_TYPES as readonly string[]).includes(value);
}

/** Longest comment body, in characters. */
export const MAX_COMMENT_CHARS = 5000;

/** One message as the client reads it: on their page and in the answer to their own comment. */
export const ClientComment = z
  .object({
    id: z.string().meta({ description: 'cmt_…' }),
    item_key: z.string(),
    author: z.enum(COMMENT_AUTHORS),
    body: z.string(),
    created_at: z.iso.datetime().meta({ description: 'ISO 8601 timestamp in UTC' }),
  })
  .meta({ id: 'PortalComment', description: 'One message of the conversation on an item' });
export type ClientComment = z.infer<typeof ClientComment>;

export const CommentActor = z
  .object({
    type: z.enum(COMMENT_ACTOR_TYPES).meta({
      description: 'user: a person in the dashboard; api_key: an API key or an agent’s token; client',
    }),
    id: z.string().nullable().meta({
      description: "user: the person's id; api_key: the key's id (key_…); null for the client",
    }),
    name: z.string().nullable().meta({
      description:
        "What they were called when they wrote: the person's name (their email when they gave none) or the key's name; null for the client",
    }),
  })
  .meta({ id: 'CommentActor', description: 'Who wrote the comment' });

/** One message as the owner's side reads it (the API, the agent tools, results): with who wrote it. */
export const Comment = ClientComment.extend({ actor: CommentActor }).meta({
  id: 'Comment',
  description: 'One message of the conversation on an item, with who wrote it (actor)',
});
export type Comment = z.infer<typeof Comment>;
