import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { Config } from '../config.js';
import { ERROR_STATUS } from './errors.js';
import { ErrorBody } from './schemas.js';

/** Every route can answer these: a bad parameter, no such resource, a server fault. */
const ERROR_RESPONSES_ALL = [400, 404, 500] as const;
/** A route behind an API key: no or bad key, plan limits, a missing scope, the rate limit. */
const ERROR_RESPONSES_SECURED = [401, 402, 403, 429] as const;
/**
 * A route that changes something: the body is parsed (too large, wrong Content-Type), and the
 * change can clash with the resource's state (409) or break a domain rule (422).
 */
const ERROR_RESPONSES_WRITE = [409, 413, 415, 422] as const;
/** The portal: an archived intake is gone (410); writes are rate limited per intake and address. */
const ERROR_RESPONSES_PORTAL = [410, 429] as const;

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The error statuses a route documents, from what it is (secured, a write, part of the portal). */
export function errorStatusesFor(route: {
  method: string | string[];
  url: string;
  secured: boolean;
}): number[] {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const statuses: number[] = [...ERROR_RESPONSES_ALL];
  if (route.secured) statuses.push(...ERROR_RESPONSES_SECURED);
  if (methods.some((method) => !READ_METHODS.has(method.toUpperCase())))
    statuses.push(...ERROR_RESPONSES_WRITE);
  if (route.url.startsWith('/portal/')) statuses.push(...ERROR_RESPONSES_PORTAL);
  return statuses;
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas. Every route also gets the error
 * answers it can give by its kind (errorStatusesFor), so the document lists every status the service
 * actually answers (the fuzz suite holds it to that) and the serializer checks them.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  app.addHook('onRoute', (route) => {
    if (!route.schema || route.schema.hide) return;
    const responses = (route.schema.response ?? {}) as Record<string, unknown>;
    const statuses = errorStatusesFor({
      method: route.method,
      url: route.url,
      secured: !!route.config?.scope,
    });
    for (const status of statuses) responses[status] ??= ErrorBody;
    route.schema.response = responses;
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Intake collection service',
        version: '1.0.0',
        description: [
          'Collect files, images, long texts, structured answers and credentials from clients.',
          `Errors: every error answer is {error, message, request_id}; codes: ${Object.keys(ERROR_STATUS).join(', ')}.`,
          'Rate limits: X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset on every authenticated answer; 429 with Retry-After.',
        ].join('\n\n'),
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: svc_live_… (live data) or svc_test_… (test data).',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
}
