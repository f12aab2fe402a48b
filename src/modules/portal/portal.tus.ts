import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Server } from '@tus/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { canonicalIntakeId } from '../intakes/intakes.service.js';
import { languageChoice, type LanguageChoice } from './page/language.js';
import { loadPage, uploadErrorMessage } from './page/page.service.js';
import {
  acceptReceivedFile,
  releaseUploadSpace,
  reserveUploadSpace,
  uploadAllowance,
} from './portal.service.js';
import { portalSecurityHeaders } from './portal.security.js';
import { TUS_EXPIRE_AFTER_MS } from './portal.jobs.js';
import { createTusBackend } from './tus-backend.js';

/**
 * Resumable uploads (tus 1.0) at /portal/api/:intake_id/items/:key/tus, for large files on weak
 * connections. @tus/server keeps the partial upload in DATA_DIR/tmp-tus (with S3 storage: in the bucket,
locked through Redis, see tus-backend.ts); when the last byte arrives,
 * the finished file goes through the same inspection and checks as POST …/files
 * (acceptReceivedFile) and becomes a file of the item, or the final PATCH answers the 4xx.
 * Before any byte is accepted the routes check the intake, the item and the declared Upload-Length.
 */
const UPLOAD_ID = /^[0-9a-f]{32}$/;

interface UploadContext {
  intakeId: string;
  key: string;
  requestId: string;
  /** The reader's language, for error messages (see pageLanguage). */
  language: LanguageChoice;
}

interface TusParams {
  intake_id: string;
  key: string;
  upload_id?: string;
}

type NodeBacked = { runtime?: { node?: { req?: IncomingMessage } } };
const nodeRequestOf = (req: unknown) => (req as NodeBacked).runtime?.node?.req;

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

function errorBody(requestId: string, error: ApiError, clientMessage: string | undefined): string {
  return JSON.stringify({
    error: error.code,
    message: error.message,
    request_id: requestId,
    client_message: clientMessage,
  });
}

export async function portalTusRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  // Local files, or segments in S3 with locks in Redis (any API process resumes any upload).
  const backend = await createTusBackend(services, TUS_EXPIRE_AFTER_MS);
  const { datastore } = backend;
  app.addHook('onClose', () => backend.close());
  const contexts = new WeakMap<IncomingMessage, UploadContext>();
  const contextOf = (req: unknown) => {
    const node = nodeRequestOf(req);
    const context = node ? contexts.get(node) : undefined;
    if (!context) throw new Error('tus request without its portal context');
    return context;
  };

  const tus = new Server({
    path: '/portal/api/tus',
    datastore,
    ...(backend.locker ? { locker: backend.locker } : {}),
    relativeLocation: true,
    // Same-origin only: no Access-Control-Allow-Origin header at all.
    allowedOrigins: [],
    generateUrl: (req, { id }) => `${new URL(req.url).pathname.replace(/\/+$/, '')}/${id}`,
    getFileIdFromRequest: (_req, lastPath) => (lastPath && UPLOAD_ID.test(lastPath) ? lastPath : undefined),
    onUploadCreate: async (req, upload) => {
      const { intakeId, key, requestId, language } = contextOf(req);
      try {
        // The declared length counts against the storage quota from now on, not only once finished.
        await reserveUploadSpace(services, intakeId, upload.id, upload.size ?? 0);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw {
          status_code: error.status,
          body: errorBody(requestId, error, await localized(language, intakeId, key, error)),
        };
      }
      return { metadata: { ...upload.metadata, intake_id: intakeId, item_key: key } };
    },
    onUploadFinish: async (req, upload) => {
      const { intakeId, key, requestId, language } = contextOf(req);
      try {
        // The finished file is checked against the quota on its own, without its reservation.
        await releaseUploadSpace(services, upload.id);
        const tmpPath = await backend.finishedFile(upload.id);
        const file = await acceptReceivedFile(services, intakeId, key, {
          tmpPath,
          sha256: await sha256Of(tmpPath),
          filename: upload.metadata?.filename ?? 'upload',
        });
        return { headers: { 'X-File-Id': file.file_id } };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // @tus/server answers a thrown {status_code, body} as that response (its documented hook contract).
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw {
          status_code: error.status,
          body: errorBody(requestId, error, await localized(language, intakeId, key, error)),
        };
      } finally {
        await backend.discard(upload.id);
      }
    },
  });

  /** Checks that need our error envelope, before tus sees the request. */
  async function admit(request: FastifyRequest<{ Params: TusParams }>): Promise<UploadContext> {
    const { intake_id: rawId, key, upload_id: uploadId } = request.params;
    const context = {
      intakeId: canonicalIntakeId(rawId),
      key,
      requestId: request.id,
      language: languageChoice(request),
    };
    if (request.method === 'OPTIONS') return context;
    if (uploadId !== undefined) {
      const upload = UPLOAD_ID.test(uploadId)
        ? await datastore.getUpload(uploadId).catch(() => undefined)
        : undefined;
      if (!upload || upload.metadata?.intake_id !== context.intakeId || upload.metadata.item_key !== key) {
        throw new ApiError('not_found', 'No such upload for this item; start the upload again.');
      }
      if (request.method === 'PATCH') await uploadAllowance(services, rawId, key);
      if (request.method === 'DELETE') await releaseUploadSpace(services, uploadId);
      return context;
    }
    const allowance = await uploadAllowance(services, rawId, key);
    if (!allowance.replaces && allowance.filesAlready >= allowance.maxCount) {
      throw new ApiError(
        'unprocessable',
        `${key}.max_count: this item takes at most ${allowance.maxCount} file${allowance.maxCount === 1 ? '' : 's'}; remove one first`,
      );
    }
    const declared = request.headers['upload-length'];
    const length = typeof declared === 'string' && /^\d+$/.test(declared) ? Number(declared) : undefined;
    if (length === undefined) {
      throw new ApiError(
        'invalid_request',
        'Send the Upload-Length header: uploads of unknown length are not accepted.',
      );
    }
    if (length > allowance.maxBytes)
      throw new ApiError('payload_too_large', `The file exceeds ${allowance.limitName}.`);
    return context;
  }

  /** The error in the client's language too (`client_message`), for the page to show as it is. */
  async function localized(
    language: LanguageChoice,
    intakeId: string,
    key: string,
    error: ApiError,
  ): Promise<string | undefined> {
    const state = await loadPage(services, intakeId, {
      ip: '',
      record: false,
      language,
    }).catch(() => undefined);
    return state?.kind === 'ready' ? uploadErrorMessage(state.model, key, error) : undefined;
  }

  async function handle(request: FastifyRequest<{ Params: TusParams }>, reply: FastifyReply): Promise<void> {
    let context: UploadContext;
    try {
      context = await admit(request);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const message = await localized(
        languageChoice(request),
        request.params.intake_id,
        request.params.key,
        error,
      );
      throw new ApiError(
        error.code,
        error.message,
        { ...error.extra, client_message: message },
        error.headers,
      );
    }
    contexts.set(request.raw, context);
    reply.hijack();
    for (const [name, value] of Object.entries(portalSecurityHeaders())) reply.raw.setHeader(name, value);
    reply.raw.setHeader('X-Request-Id', request.id);
    await tus.handle(request.raw, reply.raw);
  }

  await app.register((scope, _options, done) => {
    // tus bodies are streamed to the datastore by @tus/server: leave them unread.
    scope.addContentTypeParser('application/offset+octet-stream', (_request, _payload, done) => done(null));
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const hide = { schema: { hide: true } };
    scope.route<{ Params: TusParams }>({
      method: ['POST', 'OPTIONS'],
      url: '/portal/api/:intake_id/items/:key/tus',
      ...hide,
      handler: handle,
    });
    scope.route<{ Params: TusParams }>({
      method: ['HEAD', 'PATCH', 'DELETE', 'OPTIONS'],
      url: '/portal/api/:intake_id/items/:key/tus/:upload_id',
      ...hide,
      handler: handle,
    });
    done();
  });
}
