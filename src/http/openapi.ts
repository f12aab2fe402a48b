import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { Config } from '../config.js';
import { ERROR_STATUS } from './errors.js';
import { ErrorBody } from './schemas.js';

const ERROR_RESPONSES_SECURED = [400, 401, 403, 404, 429, 500] as const;
const ERROR_RESPONSES_PUBLIC = [400, 404, 500] as const;

/**
 * The OpenAPI 3.1 document, generated from the route schemas. Every route also gets the common
 * error answers, so the document lists them and the serializer checks them.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  app.addHook('onRoute', (route) => {
    if (!route.schema || route.schema.hide) return;
    const responses = (route.schema.response ?? {}) as Record<string, unknown>;
    const statuses = route.config?.scope ? ERROR_RESPONSES_SECURED : ERROR_RESPONSES_PUBLIC;
    for (const status of statuses) responses[status] ??= ErrorBody;
    if (route.config?.scope) {
      responses[402] ??= ErrorBody;
    }
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
