import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Probes poll these every few seconds: their lines would drown the rest. */
function quiet(url: string): boolean {
  return url === '/healthz' || url === '/readyz';
}

/**
 * The access log: one line per request, written when its answer has been sent, at `info`, on the
 * request's own logger (so it carries `request_id`). It holds what Fastify's two default lines held
 * between them: `req` (method, URL with capabilities shortened, client address), `res` (status) and
 * `responseTime` (ms). Fastify's own request logging is off (`disableRequestLogging`), which halves the
 * log lines a busy server writes.
 */
export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    if (!quiet(request.url)) {
      request.log.info(
        // Through the logger's serialisers: `req` as requestForLog writes it, `res` as its status.
        { req: request, res: reply, responseTime: reply.elapsedTime },
        'request completed',
      );
    }
    done();
  });
}
