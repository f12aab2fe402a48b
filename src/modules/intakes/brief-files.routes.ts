import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { BriefFile, BriefFileList, BriefFileParams } from './brief-files.schemas.js';
import {
  attachBriefFile,
  listBriefFiles,
  removeBriefFile,
  type IncomingBriefFile,
} from './brief-files.service.js';
import { IntakeParams } from './intakes.schemas.js';
import { worldOfAuth } from '../../kernel/world.js';

const tags = ['Intakes'];
/** Above any plan's per-file limit: the upload pipeline enforces the real limit while streaming. */
const MULTIPART_FILE_CEILING = 6 * 1024 ** 3;

/** The one file of the request: multipart field `file`, or the raw body with an X-Filename header. */
async function incomingFile(request: FastifyRequest): Promise<IncomingBriefFile> {
  if (request.isMultipart()) {
    const part = await request.file({ limits: { fileSize: MULTIPART_FILE_CEILING, files: 1 } });
    if (!part || part.fieldname !== 'file') {
      throw new ApiError(
        'invalid_request',
        'Send the file in a multipart field named "file", or as the raw body.',
      );
    }
    return { stream: part.file, filename: part.filename || 'brief', declaredBytes: undefined };
  }
  const body = request.body;
  if (!(body instanceof Readable)) throw new ApiError('invalid_request', 'The request has no file body.');
  const raw = request.headers['x-filename'];
  const header = Array.isArray(raw) ? raw[0] : raw;
  let filename = 'brief';
  if (header) {
    try {
      filename = decodeURIComponent(header);
    } catch {
      filename = header;
    }
  }
  const length = Number(request.headers['content-length']);
  return { stream: body, filename, declaredBytes: Number.isFinite(length) ? length : undefined };
}

/** Files attached to the brief for the client to download (listed in the portal with signed URLs). */
export async function briefFileRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/v1/intakes/:id/brief_files', {
    config: { scope: 'intakes:read' },
    schema: {
      tags,
      summary: "List the brief's files",
      params: IntakeParams,
      response: { 200: BriefFileList },
    },
    handler: (request) => listBriefFiles(services, worldOfAuth(authOf(request)), request.params.id),
  });

  api.delete('/v1/intakes/:id/brief_files/:file_id', {
    config: { scope: 'intakes:write', audit: { action: 'intake.brief_file_delete', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Remove a brief file',
      params: BriefFileParams,
      response: { 204: z.null().meta({ description: 'Deleted' }) },
    },
    handler: async (request, reply) => {
      await removeBriefFile(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.params.file_id,
      );
      return reply.code(204).send(null);
    },
  });

  // The upload lives in its own scope: there any content type reaches the handler as an unread stream.
  await app.register(async (scope) => {
    await scope.register(multipart);
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.withTypeProvider<ZodTypeProvider>().post('/v1/intakes/:id/brief_files', {
      config: { scope: 'intakes:write', audit: { action: 'intake.brief_file_add', resourceType: 'intake' } },
      schema: {
        tags,
        summary: 'Attach a file to the brief',
        description:
          'The raw body (Content-Type and X-Filename headers) or a multipart field named file; at most 10 files per intake, each within the plan’s per-file limit (413). The client downloads them from the portal.',
        params: IntakeParams,
        response: { 201: BriefFile },
      },
      handler: async (request, reply) => {
        const auth = authOf(request);
        const file = await attachBriefFile(
          services,
          worldOfAuth(auth),
          auth.account.plan,
          request.params.id,
          await incomingFile(request),
        );
        return reply.code(201).send(file);
      },
    });
  });
}
