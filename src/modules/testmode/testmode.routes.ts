import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Timestamp } from '../../http/schemas.js';
import type { Worker } from '../../jobs/worker.js';
import type { AppServices } from '../../services.js';
import { authOf, testModeError } from '../../http/auth.js';
import { MAX_ADVANCE_SECONDS, advanceTestClock } from './testmode.service.js';

export const AdvanceClockBody = z.strictObject({
  seconds: z
    .number()
    .int()
    .positive()
    .max(MAX_ADVANCE_SECONDS, { message: `seconds must be at most ${MAX_ADVANCE_SECONDS} (10 years)` })
    .meta({ description: 'How far to move the test clock forward', examples: [259200] }),
});

export const ClockAdvanced = z
  .object({
    test_clock: Timestamp.meta({ description: "The account's test-mode time after the advance" }),
    advanced_seconds: z.number().int(),
    jobs_run: z
      .number()
      .int()
      .meta({
        description:
          'Due jobs (chases, auto-approvals, purges, webhook retries…) this call ran, or waited for while the ' +
          "server's worker ran them, before answering; every job due by the new test time has run either way",
      }),
  })
  .meta({ id: 'TestClockAdvance' });

/** Test helpers: svc_test_ keys only (a live key is refused before its body is even read). */
export function testModeRoutes(app: FastifyInstance, services: AppServices, worker: Worker): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Test mode'];

  api.post('/v1/test_helpers/advance_clock', {
    config: { scope: 'admin', audit: { action: 'test_clock.advance', resourceType: 'account' } },
    onRequest: (request, _reply, done) => done(testModeError(authOf(request))),
    schema: {
      tags,
      summary: 'Advance the test clock',
      description:
        "Moves the account's test clock forward. When this returns, every chase, auto-approval, retention purge and webhook retry due by the new test time has run (or is queued to run at once). Test keys only.",
      body: AdvanceClockBody,
      response: { 200: ClockAdvanced },
    },
    handler: async (request) => {
      const auth = authOf(request);
      return advanceTestClock(services.db, worker, services.clock, auth, request.body.seconds);
    },
  });
}
