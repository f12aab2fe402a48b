import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { authOf } from '../../http/auth.js';
import { worldOfAuth } from '../../kernel/world.js';
import type { AppServices } from '../../services.js';
import {
  Comment,
  CommentBody,
  CommentList,
  CommentListQuery,
  IntakeCommentParams,
  ItemCommentParams,
} from './comments.schemas.js';
import { addOwnerComment, listComments } from './comments.service.js';

/** The owner's side of the conversation on items (the client's is under /portal/api). */
export function commentRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Comments'];

  api.post('/v1/intakes/:id/items/:key/comments', {
    config: { scope: 'intakes:write', audit: { action: 'comment.create', resourceType: 'comment' } },
    schema: {
      tags,
      summary: 'Comment on an item',
      description:
        "The owner's message about one item (a question about an answer, a hint). The client sees it on their page and is emailed: one email per intake for the comments of a few minutes, with the portal link, never to an address that opted out of reminders and outside the client's quiet hours.",
      params: ItemCommentParams,
      body: CommentBody,
      response: { 201: Comment },
    },
    handler: async (request, reply) => {
      const world = worldOfAuth(authOf(request));
      const { id, key } = request.params;
      const comment = await addOwnerComment(services, world, id, key, request.body.body);
      request.auditResourceId = comment.id;
      return reply.code(201).send(comment);
    },
  });

  api.get('/v1/intakes/:id/comments', {
    config: { scope: 'intakes:read' },
    schema: {
      tags,
      summary: "List an intake's comments",
      description:
        'Both sides of every item’s conversation, oldest first; page with limit and starting_after.',
      params: IntakeCommentParams,
      querystring: CommentListQuery,
      response: { 200: CommentList },
    },
    handler: (request) =>
      listComments(services, worldOfAuth(authOf(request)), request.params.id, request.query),
  });
}
