import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { ErrorBody } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import {
  PortalFile,
  PortalFileParams,
  PortalItem,
  PortalItemParams,
  PortalParams,
  PortalView,
  SaveBody,
  SubmitAllResult,
  TimezoneBody,
} from './portal.schemas.js';
import {
  recordClientTimezone,
  removeFile,
  saveValue,
  submitAll,
  submitItem,
  uploadFile,
  viewPortal,
  type IncomingFile,
} from './portal.service.js';

const tags = ['Portal'];
/** Larger than any plan's per-file limit: the upload pipeline enforces the real limit while streaming. */
const MULTIPART_FILE_CEILING = 6 * 1024 ** 3;

function headerName(request: FastifyRequest): string {
  const raw = request.headers['x-filename'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return 'upload';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The one file of an upload request: multipart field `file`, or the raw body with X-Filename. */
async function incomingFile(request: FastifyRequest): Promise<IncomingFile> {
  if (request.isMultipart()) {
    const part = await request.file({ limits: { fileSize: MULTIPART_FILE_CEILING, files: 1 } });
    if (!part || part.fieldname !== 'file') {
      throw new ApiError(
        'invalid_request',
        'Send the file in a multipart field named "file", or as the raw body.',
      );
    }
    return { stream: part.file, filename: part.filename || 'upload', declaredBytes: undefined };
  }
  const body = request.body;
  if (!(body instanceof Readable)) throw new ApiError('invalid_request', 'The request has no file body.');
  const length = Number(request.headers['content-length']);
  return {
    stream: body,
    filename: headerName(request),
    declaredBytes: Number.isFinite(length) ? length : undefined,
  };
}

/**
 * The client portal's JSON API. No API key: the unguessable intake id is the capability.
 */
export async function portalApiRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/portal/api/:intake_id', {
    schema: {
      tags,
      summary: "The client's view of an intake",
      params: PortalParams,
      response: { 200: PortalView, 410: z.unknown() },
    },
    handler: (request) => viewPortal(services, request.params.intake_id, request.ip),
  });

  api.put('/portal/api/:intake_id/timezone', {
    schema: {
      tags,
      summary: "Record the client's time zone (reported by the portal page)",
      description: "Used to keep reminders out of the client's night. A time zone set by the caller is kept.",
      params: PortalParams,
      body: TimezoneBody,
      response: { 204: z.null() },
    },
    handler: async (request, reply) => {
      await recordClientTimezone(services, request.params.intake_id, request.body.timezone);
      return reply.code(204).send(null);
    },
  });

  api.put('/portal/api/:intake_id/items/:key', {
    schema: {
      tags,
      summary: 'Save a draft value (autosave)',
      params: PortalItemParams,
      body: SaveBody,
      response: { 200: PortalItem },
    },
    handler: (request) =>
      saveValue(services, request.params.intake_id, request.params.key, request.body.value),
  });

  api.delete('/portal/api/:intake_id/items/:key/files/:file_id', {
    schema: {
      tags,
      summary: 'Remove a file not yet submitted',
      params: PortalFileParams,
      response: { 204: z.null() },
    },
    handler: async (request, reply) => {
      await removeFile(services, request.params.intake_id, request.params.key, request.params.file_id);
      return reply.code(204).send(null);
    },
  });

  api.post('/portal/api/:intake_id/items/:key/submit', {
    schema: {
      tags,
      summary: 'Submit an item for review',
      description:
        '503 when too many costly structured answers are being checked at once (send it again shortly).',
      params: PortalItemParams,
      body: z.strictObject({}).nullish(),
      response: { 200: PortalItem, 503: ErrorBody },
    },
    handler: (request) => submitItem(services, request.params.intake_id, request.params.key),
  });

  api.post('/portal/api/:intake_id/submit', {
    schema: {
      tags,
      summary: 'Send every saved answer not sent yet',
      description:
        'Submits, in one transaction, every item with a saved answer that is valid and not yet sent (including changes saved after an earlier submission that is not reviewed yet). Answers that break a constraint stay unsent and are listed under invalid with the reason; the others are sent all the same. 503 when too many costly structured answers are being checked at once (send it again shortly).',
      params: PortalParams,
      body: z.strictObject({}).nullish(),
      response: { 200: SubmitAllResult, 503: ErrorBody },
    },
    handler: (request) => submitAll(services, request.params.intake_id),
  });

  // Uploads live in their own scope: there, any content type reaches the handler as an unread stream.
  await app.register(async (scope) => {
    await scope.register(multipart);
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    const uploads = scope.withTypeProvider<ZodTypeProvider>();
    uploads.post('/portal/api/:intake_id/items/:key/files', {
      schema: {
        tags,
        summary: 'Upload one file to an item',
        description:
          'The raw body (Content-Type and X-Filename headers) or a multipart field named file. 413 over max_bytes or the plan limit.',
        params: PortalItemParams,
        response: { 201: PortalFile },
      },
      handler: async (request, reply) => {
        const file = await uploadFile(
          services,
          request.params.intake_id,
          request.params.key,
          await incomingFile(request),
        );
        return reply.code(201).send(file);
      },
    });
  });
}
