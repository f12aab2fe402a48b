import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { AppServices } from '../../services.js';
import { addClientComment } from '../comments/comments.service.js';
import { ClientComment, CommentBody } from '../comments/comments.schemas.js';
import { withLockedIntake } from '../intakes/review.service.js';
import { worldOfIntake } from '../../kernel/world.js';
import { PortalItemParams } from './portal.schemas.js';
import { openIntake } from './portal.service.js';

/**
 * The client's side of the conversation on items: POST /portal/api/:intake_id/items/:key/comments.
 * The intake id is the capability; comments have their own, tighter rate limit (portal.security.ts).
 * The client may write while the intake is open to them (sent, in progress, completed).
 */
export async function clientComment(
  services: AppServices,
  id: string,
  key: string,
  body: string,
): Promise<z.infer<typeof ClientComment>> {
  const db = services.db.kysely;
  const found = await openIntake(db, id);
  const world = await worldOfIntake(db, found, { type: 'client', id: null }, services.clock);
  return withLockedIntake(db, found, (trx, intake) => addClientComment(trx, world, intake, key, body));
}

export function portalCommentRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post('/portal/api/:intake_id/items/:key/comments', {
    schema: {
      tags: ['Portal'],
      summary: 'Comment on an item (the client)',
      description:
        'Plain text up to 5,000 characters. The owner is told (owner notifications) and comment.created fires. At most 60 comments per intake per rolling hour.',
      params: PortalItemParams,
      body: CommentBody,
      response: { 201: ClientComment },
    },
    handler: async (request, reply) => {
      const { intake_id: id, key } = request.params;
      return reply.code(201).send(await clientComment(services, id, key, request.body.body));
    },
  });
}
