import type { FastifyInstance } from 'fastify';
import { httpRequestMetrics, rateLimitRejections } from '../lib/metrics.js';

/**
 * Counts every answer by its route's pattern (`/v1/intakes/:id`, never the id itself, so the label set
 * stays small) and status; requests that matched no route share the pattern `unmatched`. A 429 is
 * also counted as a rate-limit rejection.
 */
export function registerHttpMetrics(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequestMetrics.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    // Every limiter answers 429 (API keys, the portal, sign-in links, OAuth): counted here, once.
    if (reply.statusCode === 429) rateLimitRejections.inc({ route });
    done();
  });
}
