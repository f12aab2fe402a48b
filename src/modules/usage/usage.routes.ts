import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { rateLimitFor } from '../../domain/plans.js';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { usageRecord } from './usage.service.js';

const Meter = z.object({ used: z.number(), limit: z.number() });
export const Usage = z
  .object({
    period: z.string().meta({ description: 'Year-month, e.g. 2026-11' }),
    intakes: Meter,
    storage_bytes: Meter,
    sms_messages: Meter,
    seats: Meter.meta({ description: "The account's members (invited or active) against the plan's seats" }),
    rate_limit_per_hour: z.number().int().meta({
      description:
        "Requests per hour per API key: the plan's (changes with the plan at once), or a contract override",
    }),
  })
  .meta({
    id: 'Usage',
    description: "The current month's usage of the calling key's mode against the plan's quotas.",
  });

export function usageRoutes(app: FastifyInstance, services: AppServices): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/usage', {
    config: { scope: 'any' },
    schema: { tags: ['Account'], summary: 'Usage for the current period', response: { 200: Usage } },
    handler: async (request) => {
      const auth = authOf(request);
      const record = await usageRecord(
        services.db.kysely,
        { accountId: auth.account.id, livemode: auth.livemode },
        auth.account.plan,
        auth.clock.now(),
      );
      return { ...record, rate_limit_per_hour: rateLimitFor(auth.account) };
    },
  });
}
