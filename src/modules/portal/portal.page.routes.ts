import { randomBytes } from 'node:crypto';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { secureCookies } from '../../http/security-headers.js';
import type { AppServices } from '../../services.js';
import { portalAssets, type PortalAssets } from './page/assets.js';
import { renderCard } from './page/card.js';
import { catalogueLanguage, LANGUAGE_COOKIE, languageChoice } from './page/language.js';
import { portalPath, type PageModel } from './page/model.js';
import {
  loadLogo,
  loadPage,
  postItemForm,
  postRemoveFile,
  postSendAll,
  uploadErrorMessage,
  type FormOutcome,
  type PageState,
} from './page/page.service.js';
import { renderMessagePage } from './page/notice.js';
import { renderPage, renderSendBar, renderSummary } from './page/render.js';
import type { FormFields } from './page/schema-form.js';
import { uploadFile } from './portal.service.js';
import { clientComment } from './portal.comments.js';
import { CommentBody } from '../comments/comments.schemas.js';
import { emailLogoPng } from './email-logo.js';
import { portalSecurityHeaders } from './portal.security.js';
import { thumbnailOf } from './thumbnail.js';

/**
 * The client portal page (GET /portal/:intake_id) and its plain-form endpoints. Every action works
 * as an HTML form that POSTs and redirects (no script needed); the page script calls the same
 * endpoints with Accept: application/json and swaps in the re-rendered card.
 */
interface IntakeParams {
  intake_id: string;
}
interface ItemParams extends IntakeParams {
  key: string;
}
interface FileParams extends ItemParams {
  file_id: string;
}

const hidden = { schema: { hide: true } };
const MULTIPART_FILE_CEILING = 6 * 1024 ** 3;

function formFields(body: unknown): FormFields {
  const out: FormFields = {};
  if (!(body instanceof URLSearchParams)) return out;
  for (const [name, value] of body) {
    const existing = out[name];
    out[name] =
      existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}

function wantsJson(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('application/json');
}

export async function portalPageRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const assets: PortalAssets = await portalAssets();
  const paths = { scriptPath: assets.script.path, stylePath: assets.style.path };

  function sendHtml(reply: FastifyReply, status: number, render: (nonce: string) => string) {
    const nonce = randomBytes(16).toString('base64');
    return reply
      .code(status)
      .headers(portalSecurityHeaders(nonce))
      .header('Cache-Control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(render(nonce));
  }

  /** A page that is not an open intake: 404 (unknown, deleted, draft) or 410 (archived, purged). */
  function sendState(reply: FastifyReply, state: PageState, status = 200) {
    if (state.kind === 'not_found') {
      return sendHtml(reply, 404, (n) =>
        renderMessagePage({ ...state, branding: null }, paths, n, 'not_found'),
      );
    }
    if (state.kind === 'purged')
      return sendHtml(reply, 410, (n) => renderMessagePage(state, paths, n, 'purged'));
    return sendHtml(reply, state.model.closed ? 410 : status, (n) => renderPage(state.model, paths, n));
  }

  /** The page's state for a request that does not count as a view. */
  const stateFor = (request: FastifyRequest, id: string) =>
    loadPage(services, id, { ip: '', record: false, language: languageChoice(request) });

  async function readyModel(
    request: FastifyRequest,
    id: string,
    reply: FastifyReply,
  ): Promise<PageModel | undefined> {
    const state = await stateFor(request, id);
    if (state.kind === 'ready' && !state.model.closed) return state.model;
    await sendState(reply, state);
    return undefined;
  }

  /** After a form action: JSON for the script, or redirect (success) / the page with the error. */
  async function answer(
    request: FastifyRequest<{ Params: ItemParams }>,
    reply: FastifyReply,
    outcome: FormOutcome,
  ) {
    const { intake_id: id, key } = request.params;
    if (wantsJson(request)) {
      const state = await stateFor(request, id);
      if (state.kind !== 'ready')
        throw new ApiError(state.kind === 'purged' ? 'gone' : 'not_found', 'This intake is no longer open.');
      const model = state.model;
      if (!outcome.ok) model.errors.set(key, outcome.error);
      else model.notice = { key, kind: outcome.notice };
      const item = model.view.items.find((i) => i.key === key);
      return reply.code(outcome.ok ? 200 : outcome.status).send({
        ok: outcome.ok,
        message: outcome.ok ? null : outcome.error.message,
        card: item ? renderCard(item, model).value : null,
        summary: renderSummary(model).value,
        send: renderSendBar(model).value,
      });
    }
    if (outcome.ok) {
      return reply
        .code(303)
        .redirect(`${portalPath(id)}?notice=${outcome.notice}&item=${encodeURIComponent(key)}#item-${key}`);
    }
    const state = await stateFor(request, id);
    if (state.kind === 'ready') state.model.errors.set(key, outcome.error);
    return sendState(reply, state, outcome.status);
  }

  app.get<{
    Params: IntakeParams;
    Querystring: { notice?: string; item?: string; count?: string; lang?: string };
  }>('/portal/:intake_id', hidden, async (request, reply) => {
    const state = await loadPage(services, request.params.intake_id, {
      ip: request.ip,
      record: true,
      language: languageChoice(request),
    });
    const { notice, item, count, lang } = request.query;
    // A language picked on the page stays for the visit: the forms, redirects and the script's
    // requests carry the cookie, so every answer of this page speaks the same language.
    const picked = catalogueLanguage(lang);
    if (picked) {
      reply.header(
        'Set-Cookie',
        `${LANGUAGE_COOKIE}=${picked}; Path=/portal; HttpOnly; SameSite=Lax${secureCookies(services.config) ? '; Secure' : ''}`,
      );
    }
    if (state.kind === 'ready' && notice === 'sent') {
      state.model.sent = { submitted: Math.max(0, Number(count) || 0), invalid: 0 };
    }
    if (
      state.kind === 'ready' &&
      item &&
      (notice === 'saved' || notice === 'submitted' || notice === 'uploaded' || notice === 'removed')
    ) {
      state.model.notice = { key: item, kind: notice };
    }
    return sendState(reply, state);
  });

  app.get<{ Params: ItemParams }>('/portal/:intake_id/partials/:key', hidden, async (request, reply) => {
    const state = await stateFor(request, request.params.intake_id);
    if (state.kind !== 'ready')
      throw new ApiError(state.kind === 'purged' ? 'gone' : 'not_found', 'This intake is no longer open.');
    const item = state.model.view.items.find((i) => i.key === request.params.key);
    if (!item) throw new ApiError('not_found', `This intake has no item ${request.params.key}.`);
    return reply.header('Cache-Control', 'no-store').send({
      card: renderCard(item, state.model).value,
      summary: renderSummary(state.model).value,
      send: renderSendBar(state.model).value,
    });
  });

  app.get<{ Params: IntakeParams }>('/portal/:intake_id/logo', hidden, async (request, reply) => {
    const logo = await loadLogo(services, request.params.intake_id);
    if (!logo) throw new ApiError('not_found', 'No logo.');
    return reply
      .type(logo.type)
      .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
      .header('Content-Disposition', 'attachment; filename="logo"')
      .header('Cache-Control', 'private, max-age=86400')
      .send(logo.bytes);
  });

  // The logo in emails: by account (no intake id for image proxies to see), only at its current version.
  app.get<{ Params: { account_id: string }; Querystring: { v?: string } }>(
    '/portal/brand/:account_id/logo',
    hidden,
    async (request, reply) => {
      const png = /^acct_[A-Za-z0-9]{1,64}$/.test(request.params.account_id)
        ? await emailLogoPng(services.db.kysely, request.params.account_id, request.query.v)
        : undefined;
      if (!png) throw new ApiError('not_found', 'No logo.');
      return reply
        .type('image/png')
        .header('Content-Security-Policy', "default-src 'none'; sandbox")
        .header('Cross-Origin-Resource-Policy', 'cross-origin')
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .send(png);
    },
  );

  app.get<{ Params: FileParams }>(
    '/portal/api/:intake_id/items/:key/files/:file_id/thumbnail',
    hidden,
    async (request, reply) => {
      const { intake_id: id, key, file_id: fileId } = request.params;
      const bytes = await thumbnailOf(services, id, key, fileId, request.ip);
      return reply
        .type('image/webp')
        .header('Content-Disposition', 'attachment; filename="preview.webp"')
        .header('Cache-Control', 'private, max-age=3600')
        .send(bytes);
    },
  );

  app.get<{ Params: { name: string } }>('/portal/assets/:name', hidden, async (request, reply) => {
    const asset = assets.byPath.get(`/portal/assets/${request.params.name}`);
    if (!asset) throw new ApiError('not_found', 'No such asset.');
    const gzip = /\bgzip\b/.test(request.headers['accept-encoding'] ?? '');
    return reply
      .type(asset.contentType)
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .header('Vary', 'Accept-Encoding')
      .headers(gzip ? { 'Content-Encoding': 'gzip' } : {})
      .send(gzip ? asset.gzip : asset.body);
  });

  await app.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_request, body, done) => {
        done(null, new URLSearchParams(body.toString()));
      },
    );
    await scope.register(multipart);

    scope.post<{ Params: ItemParams }>('/portal/:intake_id/items/:key', hidden, async (request, reply) => {
      const model = await readyModel(request, request.params.intake_id, reply);
      if (!model) return reply;
      const outcome = await postItemForm(services, model, request.params.key, formFields(request.body));
      return answer(request, reply, outcome);
    });

    // A comment from the page's plain form; back to the item's conversation.
    scope.post<{ Params: ItemParams }>(
      '/portal/:intake_id/items/:key/comments',
      hidden,
      async (request, reply) => {
        const { intake_id: id, key } = request.params;
        const parsed = CommentBody.safeParse({ body: formFields(request.body).body });
        if (!parsed.success) {
          throw new ApiError('invalid_request', 'Write a comment of at most 5,000 characters.');
        }
        await clientComment(services, id, key, parsed.data.body);
        return reply.code(303).redirect(`${portalPath(id)}#comments-${encodeURIComponent(key)}`);
      },
    );

    // The page's one send: a plain form without script; the script asks for JSON and swaps in the cards.
    scope.post<{ Params: IntakeParams }>('/portal/:intake_id/submit', hidden, async (request, reply) => {
      const id = request.params.intake_id;
      const model = await readyModel(request, id, reply);
      if (!model) return reply;
      const { submitted, errors } = await postSendAll(services, model);
      const state = await stateFor(request, id);
      if (state.kind !== 'ready') return sendState(reply, state);
      const fresh = state.model;
      fresh.errors = errors;
      fresh.sent = { submitted: submitted.length, invalid: errors.size };
      if (wantsJson(request)) {
        const touched = new Set([...submitted, ...errors.keys()]);
        return reply.send({
          ok: errors.size === 0,
          cards: Object.fromEntries(
            fresh.view.items
              .filter((i) => touched.has(i.key))
              .map((i) => [i.key, renderCard(i, fresh).value]),
          ),
          summary: renderSummary(fresh).value,
          send: renderSendBar(fresh).value,
        });
      }
      if (errors.size === 0) {
        return reply.code(303).redirect(`${portalPath(id)}?notice=sent&count=${submitted.length}#summary`);
      }
      // What was valid went; the page shows the rest with their reasons.
      return sendState(reply, state);
    });

    scope.post<{ Params: FileParams }>(
      '/portal/:intake_id/items/:key/files/:file_id/remove',
      hidden,
      async (request, reply) => {
        const model = await readyModel(request, request.params.intake_id, reply);
        if (!model) return reply;
        return answer(
          request,
          reply,
          await postRemoveFile(services, model, request.params.key, request.params.file_id),
        );
      },
    );

    // Uploads without the page script: one multipart form post (the script uses tus instead).
    scope.post<{ Params: ItemParams }>(
      '/portal/:intake_id/items/:key/upload',
      hidden,
      async (request, reply) => {
        const { intake_id: id, key } = request.params;
        const model = await readyModel(request, id, reply);
        if (!model) return reply;
        let outcome: FormOutcome;
        try {
          const part = request.isMultipart()
            ? await request.file({ limits: { fileSize: MULTIPART_FILE_CEILING, files: 1 } })
            : undefined;
          if (!part || !part.filename) throw new ApiError('invalid_request', 'Choose a file first.');
          await uploadFile(services, id, key, {
            stream: part.file,
            filename: part.filename,
            declaredBytes: undefined,
          });
          outcome = { ok: true, notice: 'uploaded' };
        } catch (error) {
          if (!(error instanceof ApiError) || error.status >= 500) throw error;
          const message =
            error.code === 'invalid_request'
              ? model.t('error.no_file')
              : uploadErrorMessage(model, key, error);
          outcome = { ok: false, status: error.status, error: { message, fields: new Map(), draft: {} } };
        }
        return answer(request, reply, outcome);
      },
    );
  });
}
