import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import type { FileRow } from '../intakes/intakes.repository.js';
import { ApiError, notFound } from '../../http/errors.js';
import { ErrorBody } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import { attachmentDisposition, verifyFileSignature } from './signed-url.js';
import { MissingObjectError } from './storage.js';

const FileParams = z.object({ file_id: z.string().min(1).max(100) });
// Both optional at the schema level: a missing or malformed signature is a 403 like a wrong one.
const FileQuery = z.object({
  expires: z.string().optional().meta({ description: 'Expiry, Unix seconds (from the signed URL)' }),
  sig: z.string().optional().meta({ description: 'Signature, hex (from the signed URL)' }),
});

/** A media type safe to echo into a header; anything else is served as opaque bytes. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;

/**
 * Finds a file's row by its id. The rows are the intakes module's, a module above this one, so the
 * composition root passes its lookup in.
 */
export type FindFile = (
  db: Kysely<Database>,
  fileId: string,
) => Promise<Pick<FileRow, 'storage_key' | 'name' | 'size' | 'content_type'> | undefined>;

export function fileRoutes(app: FastifyInstance, services: AppServices, findFile: FindFile): void {
  app.withTypeProvider<ZodTypeProvider>().get('/files/:file_id', {
    schema: {
      tags: ['Files'],
      summary: 'Download a file through its signed URL',
      description:
        'The URL comes from the results (url, valid 24 hours). Answers the bytes as an attachment; 403 when the signature is wrong or expired.',
      params: FileParams,
      querystring: FileQuery,
      response: {
        200: z.unknown().meta({ description: "The file's bytes, with its Content-Type" }),
        403: ErrorBody,
      },
    },
    handler: async (request, reply) => {
      const { file_id: fileId } = request.params;
      const nowMs = services.clock.now().getTime();
      const { expires, sig } = request.query;
      if (!verifyFileSignature(services.config.secretKey, fileId, expires, sig, nowMs)) {
        throw new ApiError(
          'forbidden',
          'This file link is invalid or has expired; fetch the results again for a fresh one.',
        );
      }
      const file = await findFile(services.db.kysely, fileId);
      if (!file) throw notFound('file', fileId);
      const body = await services.storage.get(file.storage_key).catch((error: unknown) => {
        if (error instanceof MissingObjectError) {
          throw new ApiError('not_found', `The content of file ${fileId} is no longer stored.`);
        }
        throw error;
      });
      const maxAge = Math.max(0, Number(expires) - Math.floor(nowMs / 1000));
      return reply
        .header(
          'Content-Type',
          MEDIA_TYPE.test(file.content_type) ? file.content_type : 'application/octet-stream',
        )
        .header('Content-Length', String(file.size))
        .header('Content-Disposition', attachmentDisposition(file.name))
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Security-Policy', "default-src 'none'; sandbox")
        .header('Cache-Control', `private, max-age=${maxAge}`)
        .send(body);
    },
  });
}
