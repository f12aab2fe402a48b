import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/errors.js';
import { translator, supportedLanguage } from '../../i18n/index.js';
import { sha256Hex } from '../../lib/secrets.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import type { AppServices } from '../../services.js';
import { dashboardAssets, type DashboardAssets } from './assets.js';
import { deleteSession } from '../sessions/sessions.service.js';
import { listIntakes } from '../intakes/intakes.service.js';
import { auditUserAction } from './context.js';
import { confirmPage, errorPage, linkInvalidPage, linkSentPage, signInPage } from './pages/sign-in.js';
import { accountRoutes } from './sections/account.routes.js';
import { builderRoutes } from './sections/builder.routes.js';
import { developerRoutes } from './sections/developer.routes.js';
import { intakePageRoutes } from './sections/intakes.routes.js';
import { memberPageRoutes } from './sections/members.routes.js';
import { switcherRoutes } from './sections/switcher.routes.js';
import { action, formOf, redirect, sendHtml, type Deps } from './routing.js';
import {
  assertCsrf,
  clearSessionCookie,
  csrfToken,
  currentUser,
  readCookie,
  registerDashboardSessions,
  safeReturnPath,
  setSessionMode,
  startSession,
} from '../sessions/session.js';
import { redeemSignInLink, requestSignInLink } from '../sessions/sign-in.service.js';

const hidden = { schema: { hide: true } };

function bareChrome(request: FastifyRequest, reply: FastifyReply, assets: DashboardAssets) {
  const lang = supportedLanguage(request.headers['accept-language']?.split(',')[0]);
  return { t: translator(lang, 'dashboard'), lang, csrf: csrfToken(request, reply), assets };
}

/**
 * The account holder's dashboard at /dashboard: server-rendered pages over the same services as the
 * REST API. Forms are plain HTML POSTs (CSRF-checked) that redirect back (post/redirect/get).
 */
export async function dashboardRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  registerDashboardSessions(app, services);
  const assets = await dashboardAssets();
  const deps: Deps = { services, assets };

  app.get<{ Params: { name: string } }>('/dashboard/assets/:name', hidden, (request, reply) => {
    const asset = assets.byPath.get(`/dashboard/assets/${request.params.name}`);
    if (!asset) return reply.code(404).send();
    return reply
      .type(asset.contentType)
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .header('X-Content-Type-Options', 'nosniff')
      .send(asset.body);
  });

  await app.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 512 * 1024 },
      (_request, body, done) => done(null, new URLSearchParams(body.toString())),
    );
    // Only the settings form is multipart (its logo); each of its reads sets tight limits.
    await scope.register(multipart, { limits: { fileSize: 200 * 1024, files: 1, fields: 50 } });
    scope.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
      const status = error instanceof ApiError ? error.status : (error.statusCode ?? 500);
      if (status >= 500) request.log.error({ err: error }, 'dashboard request failed');
      const message =
        error instanceof ApiError || status < 500
          ? error.message
          : translator('en', 'dashboard')('error.internal', 'The request failed. Try again in a minute.');
      const lang = supportedLanguage(request.headers['accept-language']?.split(',')[0]);
      if (error instanceof ApiError) void reply.headers(error.headers);
      return sendHtml(
        reply,
        status,
        errorPage({ t: translator(lang, 'dashboard'), lang, assets }, status, message),
      );
    });

    scope.get('/dashboard', hidden, async (request, reply) => {
      const user = await currentUser(request);
      return reply
        .code(303)
        .header('Location', user ? '/dashboard/intakes' : '/dashboard/sign-in')
        .send();
    });

    signInRoutes(scope, services, assets);

    action(scope, deps, '/dashboard/mode', async (ctx, form, request, reply) => {
      const livemode = form.get('mode') !== 'test';
      await setSessionMode(request, ctx.user, livemode);
      await auditUserAction({ ...ctx, livemode }, 'user.mode_switch', 'user', ctx.user.userId);
      const back = safeReturnPath(form.get('return_to'))?.split('?')[0] ?? '/dashboard/intakes';
      // Ids differ between worlds: a detail page of one world means nothing in the other.
      const landing = /^\/dashboard\/[a-z]+\/[^/]+/.test(back)
        ? `/${back.split('/').slice(1, 3).join('/')}`
        : back;
      return redirect(reply, landing, 'mode');
    });

    builderRoutes(scope, deps);
    intakePageRoutes(scope, deps);
    developerRoutes(scope, deps);
    accountRoutes(scope, deps);
    memberPageRoutes(scope, deps);
    switcherRoutes(scope, deps);
  });
}

function signInRoutes(scope: FastifyInstance, services: AppServices, assets: DashboardAssets): void {
  scope.get<{ Querystring: { return_to?: string } }>('/dashboard/sign-in', hidden, async (request, reply) => {
    const returnTo = safeReturnPath(request.query.return_to);
    if (await currentUser(request)) return redirect(reply, returnTo ?? '/dashboard/intakes');
    return sendHtml(reply, 200, signInPage(bareChrome(request, reply, assets), returnTo));
  });

  scope.post('/dashboard/sign-in', hidden, async (request, reply) => {
    const form = formOf(request.body);
    assertCsrf(request, form.get('_csrf'));
    const chrome = bareChrome(request, reply, assets);
    const email = (form.get('email') ?? '').trim();
    const returnTo = safeReturnPath(form.get('return_to'));
    if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) {
      const message = chrome.t('sign_in.bad_email', 'Enter a valid email address.');
      return sendHtml(reply, 422, signInPage(chrome, returnTo, message));
    }
    try {
      await requestSignInLink(services, { email, ip: request.ip, returnTo });
    } catch (error) {
      // Production without SMTP_URL: the form says why nobody can sign in by email.
      if (error instanceof ApiError && error.code === 'service_unavailable') {
        return sendHtml(reply, 503, signInPage(chrome, returnTo, error.message));
      }
      throw error;
    }
    return sendHtml(reply, 200, linkSentPage(chrome, email));
  });

  scope.get<{ Querystring: { token?: string } }>('/dashboard/sign-in/confirm', hidden, (request, reply) => {
    const chrome = bareChrome(request, reply, assets);
    const token = request.query.token ?? '';
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return sendHtml(reply, 410, linkInvalidPage(chrome));
    return sendHtml(reply, 200, confirmPage(chrome, token));
  });

  scope.post('/dashboard/sign-in/confirm', hidden, async (request, reply) => {
    const form = formOf(request.body);
    assertCsrf(request, form.get('_csrf'));
    const redeemed = await redeemSignInLink(services, form.get('token') ?? '');
    if (!redeemed) return sendHtml(reply, 410, linkInvalidPage(bareChrome(request, reply, assets)));
    // A new session on every sign-in (no fixation): whatever session this browser had ends.
    await endSession(request, services);
    // First run: after the README's test-key quickstart the data is in test mode; open there, and say so.
    const testFirst = await onlyTestHasIntakes(services, redeemed.user.account_id);
    await startSession(request, reply, redeemed.user, !testFirst);
    // A person of several accounts who has used none yet chooses where to work first.
    if (redeemed.choose) return redirect(reply, '/dashboard/accounts');
    const landing = safeReturnPath(redeemed.returnTo) ?? '/dashboard/intakes';
    return testFirst ? redirect(reply, landing, 'first_run_test') : redirect(reply, landing);
  });

  scope.post('/dashboard/sign-out', hidden, async (request, reply) => {
    const form = formOf(request.body);
    assertCsrf(request, form.get('_csrf'));
    const user = await currentUser(request);
    await endSession(request, services);
    if (user) {
      await insertAuditEntry(services.db.kysely, {
        account_id: user.accountId,
        livemode: user.livemode ? 1 : 0,
        action: 'user.sign_out',
        resource_type: 'user',
        resource_id: user.userId,
        actor_type: 'user',
        actor_id: user.userId,
        request_id: request.id,
        created_at: services.clock.now().toISOString(),
      });
    }
    clearSessionCookie(request, reply);
    return redirect(reply, '/dashboard/sign-in');
  });
}

/** Whether the account has test intakes and no live ones (it has tried the service, not used it yet). */
async function onlyTestHasIntakes(services: AppServices, accountId: string): Promise<boolean> {
  const inMode = async (livemode: boolean) =>
    (
      await listIntakes(
        services.db.kysely,
        { accountId, livemode, clock: services.clock, offsetMs: 0, actor: { type: 'system', id: null } },
        { limit: 1, offset: 0 },
      )
    ).total;
  return (await inMode(false)) > 0 && (await inMode(true)) === 0;
}

async function endSession(request: FastifyRequest, services: AppServices): Promise<void> {
  const name = request.server.dashboardSessions.sessionCookie;
  const raw = readCookie(request, name);
  if (raw) await deleteSession(services.db.kysely, sha256Hex(raw));
}
