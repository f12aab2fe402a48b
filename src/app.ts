import { hostname } from 'node:os';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { registerAuth } from './http/auth.js';
import { randomHex } from './lib/ids.js';
import { apiKeyStore } from './modules/keys/key-lookup.js';
import { registerReadMemo } from './http/read-memo.js';
import { requestForLog } from './http/log-safety.js';
import { requestLoggerFactory } from './http/request-logger.js';
import { registerAccessLog } from './http/access-log.js';
import { frameworkErrorHandler, registerErrorHandling } from './http/error-handler.js';
import { jsonHasNul, nulRefused, registerNulGuard } from './http/input-safety.js';
import { registerOpenApi } from './http/openapi.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { timeoutOptions } from './http/timeouts.js';
import { fastifyTrustProxy } from './http/trust-proxy.js';
import { accountRoutes } from './modules/accounts/accounts.routes.js';
import { registerAuditHook } from './modules/audit/audit.hook.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { billingRoutes } from './modules/billing/billing.routes.js';
import { oauthRoutes } from './modules/oauth/oauth.routes.js';
import { fileRoutes } from './modules/files/files.routes.js';
import { chaseRoutes } from './modules/chases/chases.routes.js';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.js';
import { healthRoutes } from './modules/health/health.routes.js';
import { siteRoutes } from './modules/site/site.routes.js';
import { keyRoutes } from './modules/keys/keys.routes.js';
import { memberRoutes } from './modules/sessions/members.routes.js';
import { mcpRoutes } from './modules/mcp/mcp.routes.js';
import { notifyRoutes } from './modules/notify/notify.routes.js';
import { chasesInboundRoutes } from './modules/chases/chases.inbound.routes.js';
import { pricingRoutes } from './modules/pricing/pricing.routes.js';
import { recipientRoutes } from './modules/recipients/recipients.routes.js';
import { simulateRoutes } from './modules/testmode/simulate.routes.js';
import { testModeRoutes } from './modules/testmode/testmode.routes.js';
import { intakeRoutes } from './modules/intakes/intakes.routes.js';
import { findFile } from './modules/intakes/intakes.service.js';
import { intakeEditingRoutes } from './modules/intakes/editing.routes.js';
import { briefFileRoutes } from './modules/intakes/brief-files.routes.js';
import { folderRoutes } from './modules/folders/folders.routes.js';
import { portalApiRoutes } from './modules/portal/portal.routes.js';
import { portalCommentRoutes } from './modules/portal/portal.comments.js';
import { commentRoutes } from './modules/comments/comments.routes.js';
import { portalPageRoutes } from './modules/portal/portal.page.routes.js';
import { registerPortalSecurity } from './modules/portal/portal.security.js';
import { portalTusRoutes } from './modules/portal/portal.tus.js';
import { templateRoutes } from './modules/templates/templates.routes.js';
import { usageRoutes } from './modules/usage/usage.routes.js';
import { webhookRoutes } from './modules/webhooks/webhooks.routes.js';
import type { Worker } from './jobs/worker.js';
import { destination, type DestinationStream } from 'pino';
import { registerHttpMetrics } from './http/metrics.js';
import type { AppServices } from './services.js';

export const JSON_BODY_LIMIT = 1024 * 1024;

/**
 * Builds the HTTP app: cross-cutting hooks first, then each module's routes. Logs go to stdout (pino's default
 * asynchronous destination) unless `logStream` names another destination.
 */
export async function buildApp(
  services: AppServices,
  worker: Worker,
  logStream?: DestinationStream,
): Promise<FastifyInstance> {
  // pino's own default (asynchronous writes to stdout), made here so the access log shares it.
  const stream = logStream ?? destination({ fd: process.stdout.fd });
  // pino's default bindings, named here so the access log writes the same ones.
  const base = { pid: process.pid, hostname: hostname() };
  const app = Fastify({
    logger: {
      level: services.config.logLevel,
      stream,
      base,
      // A request is logged as requestForLog writes it: method, shortened URL, client address; never
      // its headers, so no credential can reach a line through it.
      serializers: { req: requestForLog },
    },
    // 128 random bits, as 32 hex characters, from the ids' pool of random bytes.
    genReqId: () => `req_${randomHex(16)}`,
    // A request's child logger is made when it first logs a line (most never do).
    childLoggerFactory: requestLoggerFactory,
    logController: new LogController({
      requestIdLogLabel: 'request_id',
      // One access-log line per request instead of Fastify's two (registerAccessLog).
      disableRequestLogging: true,
    }),
    bodyLimit: JSON_BODY_LIMIT,
    // Path parameters include email addresses (recipients): up to 254 characters, each percent-encoded.
    routerOptions: { maxParamLength: 254 * 3 },
    // Off unless TRUST_PROXY names the proxies in front: only they may say who the client is.
    trustProxy: fastifyTrustProxy(services.config.trustProxy),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler,
    ...timeoutOptions(services.config.httpTimeouts),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON endpoints take JSON only (CONTRACT: another Content-Type is 415); upload routes add their own parsers.
  app.removeContentTypeParser('text/plain');
  // An empty JSON body counts as no body (action endpoints are often called with a bare Content-Type).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === '') return done(null, undefined);
    if (jsonHasNul(text)) return done(nulRefused('request body'), undefined);
    void parseJson(request, text, done);
  });

  registerErrorHandling(app);
  registerAccessLog(app, { stream, level: services.config.logLevel, base });
  registerHttpMetrics(app);
  registerSecurityHeaders(app, services.config);
  registerNulGuard(app);
  registerAuth(app, services, apiKeyStore(services.db));
  registerReadMemo(app, services);
  registerAuditHook(app, services);
  await registerOpenApi(app, services.config);

  healthRoutes(app, services);
  siteRoutes(app);
  pricingRoutes(app);
  accountRoutes(app, services);
  keyRoutes(app, services);
  memberRoutes(app, services);
  usageRoutes(app, services);
  auditRoutes(app, services);
  fileRoutes(app, services, findFile);
  testModeRoutes(app, services, worker);
  simulateRoutes(app, services);
  intakeRoutes(app, services);
  intakeEditingRoutes(app, services);
  commentRoutes(app, services);
  folderRoutes(app, services);
  await briefFileRoutes(app, services);
  chaseRoutes(app, services);
  recipientRoutes(app, services);
  notifyRoutes(app, services);
  await chasesInboundRoutes(app, services);
  templateRoutes(app, services);
  mcpRoutes(app, services);
  webhookRoutes(app, services);
  registerPortalSecurity(app, services);
  await portalApiRoutes(app, services);
  portalCommentRoutes(app, services);
  await portalPageRoutes(app, services);
  await portalTusRoutes(app, services);
  await dashboardRoutes(app, services);
  await billingRoutes(app, services);
  await oauthRoutes(app, services);

  app.get('/v1/openapi.json', { schema: { hide: true } }, () => app.swagger());
  return app;
}
