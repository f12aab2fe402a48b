import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PLANS } from '../../domain/plans.js';

const PlanSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    price_monthly_usd: z.number(),
    rate_limit_per_hour: z.number(),
    quotas: z.object({
      intakes_per_month: z.number(),
      storage_bytes: z.number(),
      sms_per_month: z.number(),
      seats: z
        .number()
        .meta({ description: 'People who may sign in to the account (members, invited or active)' }),
    }),
    max_file_bytes: z.number(),
    features: z.record(z.string(), z.union([z.boolean(), z.number()])),
  })
  .meta({ id: 'Plan' });

export function pricingRoutes(app: FastifyInstance): void {
  app.withTypeProvider<ZodTypeProvider>().get('/pricing.json', {
    schema: {
      tags: ['Public'],
      summary: 'Pricing tiers, limits and feature flags',
      response: { 200: z.object({ plans: z.array(PlanSchema) }) },
    },
    handler: (_request, reply) => {
      void reply.header('Cache-Control', 'public, max-age=300');
      return { plans: Object.values(PLANS) };
    },
  });
}
