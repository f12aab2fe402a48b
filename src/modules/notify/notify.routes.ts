import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PageLimit, Timestamp, optional } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import { canonicalIntakeId } from '../intakes/intakes.service.js';
import { authOf, testModeError } from '../../http/auth.js';
import { outboxMessages } from './notify.repository.js';

export const OutboxMessage = z
  .object({
    id: z.string(),
    channel: z.enum(['email', 'sms']),
    to: z.string(),
    subject: z.string().nullable(),
    text: z.string(),
    html: z.string().nullable(),
    intake_id: z.string().nullable(),
    status: z.enum(['captured', 'dropped']),
    created_at: Timestamp,
  })
  .meta({ id: 'OutboxMessage' });

export const Outbox = z.object({ messages: z.array(OutboxMessage) }).meta({ id: 'Outbox' });

export const OutboxQuery = z.strictObject({
  intake_id: optional(z.string().min(1).max(64)).meta({ description: 'Only the messages about this intake' }),
  // At most 100, as on every list of the API.
  limit: PageLimit(100, 100),
});

export function notifyRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/v1/test_helpers/outbox', {
    config: { scope: 'intakes:read' },
    onRequest: (request, _reply, done) => done(testModeError(authOf(request))),
    schema: {
      tags: ['Test mode'],
      summary: 'The test inbox',
      description:
        "Every email (captured) and SMS (dropped) the account's test mode produced, newest first. Test keys only.",
      querystring: OutboxQuery,
      response: { 200: Outbox },
    },
    handler: async (request) => {
      const auth = authOf(request);
      const rows = await outboxMessages(
        services.db.kysely,
        { accountId: auth.account.id, livemode: auth.livemode },
        {
          intakeId: request.query.intake_id ? canonicalIntakeId(request.query.intake_id) : undefined,
          limit: request.query.limit,
        },
      );
      return {
        messages: rows.map((m) => ({
          id: m.id,
          channel: m.channel,
          to: m.to_address,
          subject: m.subject,
          text: m.text_body ?? '',
          html: m.html_body,
          intake_id: m.intake_id,
          status: m.status as 'captured' | 'dropped',
          created_at: m.created_at,
        })),
      };
    },
  });
}
