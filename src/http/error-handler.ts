import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError, type ErrorCode } from './errors.js';
import { SchemaChecksUnavailableError } from '../lib/schema-budget.js';

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

/** Busboy's parse errors carry no status or code, only these messages. */
const MULTIPART_PARSE_ERROR = /^(Multipart: |Unexpected end of (form|multipart data)|Malformed part header)/;

function send(reply: FastifyReply, request: FastifyRequest, error: ApiError): FastifyReply {
  void reply.headers(error.headers);
  return reply.code(error.status).send({
    error: error.code,
    message: error.message,
    request_id: request.id,
    ...error.extra,
  });
}

/**
 * Errors Fastify raises before routing (a malformed percent-encoding, an over-long path parameter):
 * without this they answer in Fastify's own shape, without our envelope or request id.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('X-Request-Id', request.id);
  const path = request.url.split('?')[0] ?? '';
  const error =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError(
          'not_found',
          `No resource at ${path.slice(0, 200)}: a path segment is too long to be an id.`,
        )
      : new ApiError('invalid_request', 'Malformed URL: a path segment is not valid percent-encoded UTF-8.');
  void send(reply, request, error);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) return send(reply, request, err);
    if (err instanceof SchemaChecksUnavailableError)
      return send(reply, request, new ApiError('service_unavailable', err.message));
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
    if (MULTIPART_PARSE_ERROR.test(err.message) && !err.statusCode) {
      return send(
        reply,
        request,
        new ApiError('invalid_request', `Malformed multipart body: ${err.message}`),
      );
    }
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
