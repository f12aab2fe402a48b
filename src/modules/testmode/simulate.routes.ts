import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import { optional } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import { IntakeParams, IntakeStatusObject } from '../intakes/intakes.schemas.js';
import { worldOfAuth } from '../../kernel/world.js';
import { simulate } from './simulate.service.js';

export const SimulateBody = z.strictObject({
  action: z.enum(['view', 'submit', 'bounce']).meta({
    description:
      'view: the client opens the portal. submit: synthetic values and files that satisfy each item, submitted. bounce: the next reminder email hard-bounces.',
  }),
  items: optional(z.array(z.string().min(1)).min(1)).meta({
    description: 'Item keys to submit (default: every item still waiting for the client)',
  }),
});

export function simulateRoutes(app: FastifyInstance, services: AppServices): void {
  app.withTypeProvider<ZodTypeProvider>().post('/v1/test_helpers/intakes/:id/simulate', {
    config: { scope: 'intakes:write', audit: { action: 'test_helpers.simulate', resourceType: 'intake' } },
    schema: {
      tags: ['Test mode'],
      summary: 'Simulate the client of a test-mode intake',
      description: 'Test keys only. Answers with the intake status after the simulated action.',
      params: IntakeParams,
      body: SimulateBody,
      response: { 200: IntakeStatusObject },
    },
    handler: (request) => {
      return simulate(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.body.action,
        request.body.items,
      );
    },
  });
}
