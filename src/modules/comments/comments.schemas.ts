import { z } from 'zod';
import { Comment, MAX_COMMENT_CHARS } from '../../domain/comments.js';
import { PageLimit, optional } from '../../http/schemas.js';

export {
  COMMENT_AUTHORS,
  ClientComment,
  Comment,
  CommentActor,
  MAX_COMMENT_CHARS,
  type CommentAuthor,
} from '../../domain/comments.js';

export const CommentBody = z
  .strictObject({
    body: z.string().trim().min(1).max(MAX_COMMENT_CHARS).meta({
      description: 'Plain text (line breaks kept); shown escaped wherever it appears',
    }),
  })
  .meta({ id: 'CommentBody', examples: [{ body: 'The logo is too small: do you have the original file?' }] });

export const CommentList = z.object({ comments: z.array(Comment), has_more: z.boolean() }).meta({
  id: 'CommentList',
  description: 'Oldest first. Pass the last comment id as starting_after for the next page.',
});

export const CommentListQuery = z.strictObject({
  item_key: optional(z.string().min(1).max(64)).meta({ description: "Only this item's conversation" }),
  limit: PageLimit(100, 50),
  starting_after: optional(z.string().min(1).max(64)).meta({
    description: 'A comment id: the page starts after it',
  }),
});

export const IntakeCommentParams = z.strictObject({ id: z.string().min(1).max(64) });
export const ItemCommentParams = z.strictObject({
  id: z.string().min(1).max(64),
  key: z.string().min(1).max(64),
});
