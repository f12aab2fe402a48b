import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { portalSecurityHeaders } from '../portal/portal.security.js';
import type { AppServices } from '../../services.js';
import type { DashboardAssets } from './assets.js';
import { dashboardContext, type DashboardContext } from './context.js';
import { assertCsrf, safeReturnPath } from '../sessions/session.js';

/** Form fields as posted (application/x-www-form-urlencoded). */
export type Form = URLSearchParams;

export interface Deps {
  services: AppServices;
  assets: DashboardAssets;
}

const hidden = { schema: { hide: true } };

/** Dashboard pages: the portal's strict headers (same-origin only, no framing, no referrer). */
export function dashboardHeaders(): Record<string, string> {
  const nonce = randomBytes(16).toString('base64');
  return { ...portalSecurityHeaders(nonce), 'Cache-Control': 'no-store' };
}

export function sendHtml(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).headers(dashboardHeaders()).type('text/html; charset=utf-8').send(body);
}

/** Post/redirect/get: after an action, the page it belongs to (with a notice key, never free text). */
export function redirect(reply: FastifyReply, path: string, notice?: string): FastifyReply {
  // Every dashboard redirect stays on this site, whatever a form or a query put in `path`.
  const safePath = safeReturnPath(path) ?? '/dashboard';
  const target = notice
    ? `${safePath}${safePath.includes('?') ? '&' : '?'}notice=${encodeURIComponent(notice)}`
    : safePath;
  return reply.code(303).header('Location', target).send();
}

export function formOf(body: unknown): Form {
  return body instanceof URLSearchParams ? body : new URLSearchParams();
}

type PageHandler<P> = (
  ctx: DashboardContext,
  request: FastifyRequest<{ Params: P; Querystring: Record<string, string | undefined> }>,
  reply: FastifyReply,
) => Promise<string | FastifyReply>;

type FormHandler<P> = (
  ctx: DashboardContext,
  form: Form,
  request: FastifyRequest<{ Params: P }>,
  reply: FastifyReply,
) => Promise<string | FastifyReply>;

/** A signed-in GET page; signed-out visitors go to sign-in and come back here. */
export function page<P = Record<string, string>>(
  scope: FastifyInstance,
  deps: Deps,
  path: string,
  handler: PageHandler<P>,
): void {
  scope.get<{ Params: P; Querystring: Record<string, string | undefined> }>(
    path,
    hidden,
    async (request, reply) => {
      const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
      if (!ctx) return reply;
      const out = await handler(ctx, request, reply);
      return typeof out === 'string' ? sendHtml(reply, reply.statusCode, out) : out;
    },
  );
}

/** A signed-in form POST: the CSRF token is checked before anything else happens. */
export function action<P = Record<string, string>>(
  scope: FastifyInstance,
  deps: Deps,
  path: string,
  handler: FormHandler<P>,
): void {
  scope.post<{ Params: P }>(path, hidden, async (request, reply) => {
    const form = formOf(request.body);
    assertCsrf(request, form.get('_csrf'));
    const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
    if (!ctx) return reply;
    const out = await handler(ctx, form, request, reply);
    return typeof out === 'string' ? sendHtml(reply, reply.statusCode, out) : out;
  });
}

export function notices(ctx: DashboardContext, key: string | undefined): string | null {
  if (!key) return null;
  const known: Record<string, string> = {
    created: ctx.t('notice.created', 'Created.'),
    saved: ctx.t('notice.saved', 'Saved.'),
    deleted: ctx.t('notice.deleted', 'Deleted.'),
    approved: ctx.t('notice.approved', 'Item approved.'),
    revision: ctx.t('notice.revision', 'Revision requested: the client has been told what to change.'),
    chased: ctx.t('notice.chased', 'Reminder sent.'),
    archived: ctx.t('notice.archived', 'Intake archived.'),
    sent: ctx.t('notice.sent', 'Intake sent to the client.'),
    revoked: ctx.t('notice.revoked', 'Key revoked. It stops working at once.'),
    invited: ctx.t('notice.invited', 'Invitation sent.'),
    removed: ctx.t('notice.removed', 'User removed.'),
    switched: ctx.t('notice.switched', 'Now in {{account}}.', { account: ctx.accountName }),
    mode: ctx.livemode
      ? ctx.t('notice.mode_live', 'Now showing live data.')
      : ctx.t('notice.mode_test', 'Now showing test data.'),
    decided: ctx.t('notice.decided', 'Answer saved.'),
    commented: ctx.t(
      'notice.commented',
      'Comment sent: the client sees it on their page and gets an email about it within a few minutes.',
    ),
    approved_all: ctx.t('review.notice.approved_all', 'Every submitted answer is approved.'),
    nothing_to_approve: ctx.t('review.notice.nothing_to_approve', 'No answers were waiting for review.'),
    chased_test: ctx.t(
      'review.notice.chased_test',
      'Test mode: the reminder went to the test inbox, not to the client.',
    ),
    chased_test_sms: ctx.t(
      'review.notice.chased_test_sms',
      'Test mode: no SMS was sent. Its text is in the test inbox.',
    ),
    first_run_test: ctx.t(
      'review.notice.first_run_test',
      'Showing test data: your live account has no intakes yet, your test data has. Switch to live data when you are ready.',
    ),
  };
  return known[key] ?? null;
}
