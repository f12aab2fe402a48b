import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError, type ErrorCode } from './errors.js';

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message: string;
  params: Record<string, unknown>;
}

/** "body.client.email: Invalid email address" — names the field so the caller knows what to fix. */
function describeValidation(context: string, issues: ValidationIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = [context, ...issue.instancePath.split('/').filter(Boolean)].join('.');
      if (issue.keyword === 'unrecognized_keys') {
        const keys = (issue.params.keys as string[] | undefined) ?? [];
        return keys.map((key) => `${path}.${key}: unknown field (check its spelling)`).join('; ');
      }
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}

/** Fastify's own request errors, as our codes and messages. */
const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [
    'unsupported_media_type',
    'Unsupported Content-Type: send application/json.',
  ],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large', 'Request body too large.'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [
    'invalid_request',
    'Empty body with Content-Type application/json: send a JSON object, or no Content-Type.',
  ],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['invalid_request', 'Content-Length does not match the body.'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_request', 'Malformed JSON body.'],
};

function send(reply: FastifyReply, request: FastifyRequest, error: ApiError): FastifyReply {
  void reply.headers(error.headers);
  return reply.code(error.status).send({
    error: error.code,
    message: error.message,
    request_id: request.id,
    ...error.extra,
  });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) return send(reply, request, err);
    if (hasZodFastifySchemaValidationErrors(err)) {
      const context = err.validationContext ?? 'request';
      return send(
        reply,
        request,
        new ApiError('invalid_request', describeValidation(context, err.validation as ValidationIssue[])),
      );
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return send(reply, request, new ApiError(known[0], known[1]));
    if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
      return send(reply, request, new ApiError('invalid_request', `Malformed JSON body: ${err.message}`));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return send(reply, request, new ApiError('invalid_request', err.message));
    }
    request.log.error({ err }, 'unhandled error');
    return send(
      reply,
      request,
      new ApiError('internal_error', 'Unexpected server error. Safe to retry with exponential backoff.'),
    );
  });

  app.setNotFoundHandler((request, reply) =>
    send(
      reply,
      request,
      new ApiError('not_found', `No route ${request.method} ${request.url.split('?')[0] ?? ''}.`),
    ),
  );
}
