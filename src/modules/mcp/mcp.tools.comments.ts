import { z } from 'zod';
import {
  Comment,
  CommentBody,
  CommentList,
  CommentListQuery,
  IntakeCommentParams,
  ItemCommentParams,
} from '../comments/comments.schemas.js';
import { READ_ONLY, REACHES_CLIENT } from './mcp.annotations.js';
import { defineTool, type ToolSpec } from './mcp.executor.js';
import { ID_ALIAS } from './mcp.guidance.js';

/*
 * Agent tools for the conversation on items: one REST endpoint each, their arguments built from the
 * routes' own schemas (path parameters under their REST names plus the body or query).
 */

const intakeId = IntakeCommentParams.shape.id.describe(
  `The intake's id, from define_intake or list_intakes. ${ID_ALIAS}`,
);
const itemKey = ItemCommentParams.shape.key.describe('The item key within the intake, e.g. logo.');

export const COMMENT_TOOLS: readonly ToolSpec[] = [
  defineTool({
    name: 'comment_on_item',
    title: 'Comment on an item',
    description: [
      'Write to the client about one item (a question about their answer, what to change, a hint), without sending it back for revision. Plain text up to 5,000 characters.',
      'The client sees it on their page and gets one email for the comments of a few minutes (with the page link; none if they opted out of reminders, and never in their night). Their replies come back as the webhook event comment.created and in list_comments.',
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/items/:item_key/comments',
    input: z.strictObject({ intake_id: intakeId, item_key: itemKey, ...CommentBody.shape }),
    output: Comment,
    annotations: REACHES_CLIENT,
    summarize: (r) => `Comment ${r.id} on ${r.item_key} saved; the client will be emailed about it shortly.`,
  }),
  defineTool({
    name: 'list_comments',
    title: "Read an intake's comments",
    description:
      "Both sides of every item's conversation (author owner or client), oldest first. item_key narrows it to one item; page with limit and starting_after (the last comment id) while has_more is true.",
    method: 'GET',
    path: '/v1/intakes/:intake_id/comments',
    input: z.strictObject({ intake_id: intakeId, ...CommentListQuery.shape }),
    output: CommentList,
    annotations: READ_ONLY,
    summarize: (r) =>
      r.comments.length === 0
        ? 'No comments.'
        : `${r.comments.length} comment${r.comments.length === 1 ? '' : 's'}, the latest by the ${r.comments.at(-1)?.author ?? 'owner'}${r.has_more ? '; more with starting_after' : ''}.`,
  }),
];
