import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { IntakeParams } from '../intakes/intakes.schemas.js';
import { worldOfAuth } from '../../kernel/world.js';
import { Recipient, RecipientInput } from '../intakes/people.schemas.js';
import { RecipientParams } from './recipients.schemas.js';
import { addRecipient, reinstateRecipient, removeRecipient } from './recipients.service.js';

const tags = ['Intakes'];
const NoBody = z.strictObject({}).nullish();

export function recipientRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post('/v1/intakes/:id/recipients', {
    config: { scope: 'intakes:write', audit: { action: 'intake.recipient_add', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Add a recipient',
      operationId: 'add_recipient',
      description:
        'Someone besides the client who gets the portal link (at once when the intake is sent) and their own reminders and opt-out link, in their own email: nobody sees the other addresses. 409 when the address is already a recipient or the intake is archived; 422 beyond 10 recipients besides the client.',
      params: IntakeParams,
      body: RecipientInput,
      response: { 201: Recipient },
    },
    handler: async (request, reply) => {
      const added = await addRecipient(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.body,
      );
      return reply.code(201).send(added);
    },
  });

  api.delete('/v1/intakes/:id/recipients/:email', {
    config: { scope: 'intakes:write', audit: { action: 'intake.recipient_remove', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Remove a recipient',
      operationId: 'remove_recipient',
      description:
        'Their pending reminder is called off and they get nothing more. The client cannot be removed (409).',
      params: RecipientParams,
      response: { 204: z.null().meta({ description: 'Removed' }) },
    },
    handler: async (request, reply) => {
      await removeRecipient(services, worldOfAuth(authOf(request)), request.params.id, request.params.email);
      return reply.code(204).send(null);
    },
  });

  api.post('/v1/intakes/:id/recipients/:email/reinstate', {
    config: {
      scope: 'intakes:write',
      audit: { action: 'intake.recipient_reinstate', resourceType: 'intake' },
    },
    schema: {
      tags,
      summary: 'Reinstate a bounced recipient',
      operationId: 'reinstate_recipient',
      description:
        "After a wrong bounce or spam report: lifts the address's suppression (for the whole account and mode) and resumes that person's reminders when something is owed. Works for the client's address too.",
      params: RecipientParams,
      body: NoBody,
      response: { 200: Recipient },
    },
    handler: (request) => {
      return reinstateRecipient(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.params.email,
      );
    },
  });
}
