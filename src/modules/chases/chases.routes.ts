import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { ChaseRecord, IntakeParams } from '../intakes/intakes.schemas.js';
import { worldOfAuth } from '../../kernel/world.js';
import { ChaseBody } from './chases.schemas.js';
import { chaseNow } from './chases.service.js';

export function chaseRoutes(app: FastifyInstance, services: AppServices): void {
  app.withTypeProvider<ZodTypeProvider>().post('/v1/intakes/:id/chase', {
    config: { scope: 'intakes:write', audit: { action: 'intake.chase', resourceType: 'intake' } },
    schema: {
      tags: ['Intakes'],
      summary: 'Chase the client now',
      operationId: 'send_chase',
      description:
        "Sends a reminder now, outside the schedule, and answers with its chase record. channel sms (to escalate after email bounces) needs client.phone (422), the plan's SMS feature (402 plan_required) and SMS quota (402 quota_exceeded). 409 when the intake is a draft, completed or archived, the client owes nothing, opted out, or the email address is suppressed.",
      params: IntakeParams,
      body: ChaseBody,
      response: { 200: ChaseRecord },
    },
    handler: (request) => {
      const auth = authOf(request);
      return chaseNow(
        services,
        worldOfAuth(auth),
        auth.account.plan,
        request.params.id,
        request.body?.channel ?? 'email',
      );
    },
  });
}
