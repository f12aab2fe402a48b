import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pingDatabase } from '../../db/database.js';
import type { AppServices } from '../../services.js';

const CheckResult = z.enum(['ok', 'down']);
const Readiness = z
  .object({
    status: z.enum(['ok', 'unavailable', 'draining']),
    checks: z.object({
      database: CheckResult,
      storage: CheckResult,
      email: CheckResult,
      rate_limits: CheckResult,
    }),
  })
  .meta({ id: 'Readiness' });

const PROBE_TIMEOUT_MS = 2_000;

async function probe(check: () => Promise<void>): Promise<z.infer<typeof CheckResult>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('probe timed out')), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/healthz', {
    logLevel: 'warn',
    schema: {
      tags: ['Public'],
      summary: 'Liveness probe',
      response: { 200: z.object({ status: z.literal('ok') }) },
    },
    handler: () => ({ status: 'ok' as const }),
  });

  api.get('/readyz', {
    logLevel: 'warn',
    schema: {
      tags: ['Public'],
      summary: 'Readiness probe',
      description:
        '200 only when the database, file storage, email transport and rate-limit store answer; 503 while any is down or while the process drains.',
      response: { 200: Readiness, 503: Readiness },
    },
    handler: async (_request, reply) => {
      const [database, storage, email, rate_limits] = await Promise.all([
        probe(() => pingDatabase(services.db)),
        probe(() => services.storage.check()),
        probe(() => services.mailer.check()),
        probe(() => services.limiter.check()),
      ]);
      const checks = { database, storage, email, rate_limits };
      const healthy = Object.values(checks).every((result) => result === 'ok');
      const status = services.lifecycle.draining ? 'draining' : healthy ? 'ok' : 'unavailable';
      return reply.code(status === 'ok' ? 200 : 503).send({ status, checks });
    },
  });
}
