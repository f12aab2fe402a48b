import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PageModel } from '../../portal/page/model.js';
import { portalUrl } from '../../intakes/intakes.mappers.js';
import { requireIntake } from '../../intakes/intakes.service.js';
import { portalAssets } from '../../portal/page/assets.js';
import { previewModel } from '../../portal/page/page.service.js';
import { renderPage as renderPortalPage } from '../../portal/page/render.js';
import { portalSecurityHeaders } from '../../portal/portal.security.js';
import { dashboardContext } from '../context.js';
import { previewPage } from '../pages/builder-preview.js';
import { notices, page, type Deps } from '../routing.js';

/**
 * The frame's policy: this origin's styles and images only, no script at all, no form may post
 * anywhere, and only the dashboard (same origin) may frame it.
 */
export function previewFrameHeaders(nonce: string): Record<string, string> {
  const csp = [
    "default-src 'self'",
    "script-src 'none'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' blob: data:",
    "connect-src 'none'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
  ].join('; ');
  return {
    ...portalSecurityHeaders(nonce),
    'Content-Security-Policy': csp,
    'X-Frame-Options': 'SAMEORIGIN',
    'Cache-Control': 'no-store',
  };
}

type IdParams = { id: string };

/** The portal page of a model under the preview's policy (no script, no form posts anywhere). */
export async function sendPreview(reply: FastifyReply, model: PageModel): Promise<FastifyReply> {
  const assets = await portalAssets();
  const nonce = randomBytes(16).toString('base64');
  const paths = { scriptPath: assets.script.path, stylePath: assets.style.path };
  return reply
    .code(200)
    .headers(previewFrameHeaders(nonce))
    .type('text/html; charset=utf-8')
    .send(renderPortalPage(model, paths, nonce));
}

export function builderPreviewRoutes(scope: FastifyInstance, deps: Deps): void {
  page<IdParams>(scope, deps, '/dashboard/intakes/:id/preview', async (ctx, request) => {
    const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
    return previewPage(
      ctx,
      {
        id: intake.id,
        projectName: intake.project_name,
        status: intake.status,
        portalUrl: portalUrl(ctx.services.config.appUrl, intake.id),
        phone: request.query.width === 'phone',
      },
      notices(ctx, request.query.notice),
    );
  });

  scope.get<{ Params: IdParams }>(
    '/dashboard/intakes/:id/preview/frame',
    { schema: { hide: true } },
    async (request, reply) => {
      const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
      if (!ctx) return reply;
      // Found in the signed-in world only: another account's id is not found (404).
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      return sendPreview(reply, await previewModel(ctx.services, intake));
    },
  );
}
