import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../http/errors.js';
import { CreateKeyBody } from '../../keys/keys.schemas.js';
import { createKeyAs, listKeysAs, revokeKeyAs } from '../../keys/keys.service.js';
import { outboxMessages } from '../../notify/notify.service.js';
import { CreateWebhookBody, DeliveriesQuery } from '../../webhooks/webhooks.schemas.js';
import {
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  rotateSecret,
  sendTestEvent,
} from '../../webhooks/webhooks.service.js';
import { asUserAction, auditUserAction, dashboardContext, type DashboardContext } from '../context.js';
import { inboxPage, keysPage, webhookDetailPage, webhooksPage } from '../pages/developer.js';
import { action, dashboardHeaders, notices, page, redirect, type Deps } from '../routing.js';
import { describeIssues } from './intakes.routes.js';

type IdParams = { id: string };

/** A refused form answers with its page and the reason (4xx), instead of a bare error page. */
async function orPageWithError(
  reply: { code: (status: number) => unknown },
  run: () => Promise<string | ReturnType<typeof redirect>>,
  onError: (message: string) => Promise<string>,
) {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) {
      reply.code(error.status);
      return onError(error.message);
    }
    throw error;
  }
}

async function webhookDetail(
  ctx: DashboardContext,
  id: string,
  extra: Omit<Parameters<typeof webhookDetailPage>[3], 'tested'> & { testedId?: string | undefined },
) {
  const endpoint = (await listWebhooks(ctx.services, ctx.world)).webhooks.find((w) => w.id === id);
  if (!endpoint) throw new ApiError('not_found', `No webhook endpoint with id ${id}.`);
  const log = await listDeliveries(ctx.services, ctx.world, id, DeliveriesQuery.parse({ limit: '50' }));
  const { testedId, ...rest } = extra;
  const tested = testedId ? log.deliveries.find((d) => d.id === testedId && d.test) : undefined;
  return webhookDetailPage(ctx, endpoint, log.deliveries, { ...rest, ...(tested ? { tested } : {}) });
}

/**
 * An email's HTML for the inbox's frame: its links open in a new tab (a <base target="_blank">), and
 * long words and links wrap, so a phone shows the whole message instead of its left part.
 */
export function framedEmail(body: string): string {
  const prelude =
    '<base target="_blank"><style>body{margin:0}a,p,td,div{overflow-wrap:anywhere}img{max-width:100%;height:auto}</style>';
  const head = /<head[^>]*>/i.exec(body);
  return head ? body.replace(head[0], `${head[0]}${prelude}`) : `${prelude}${body}`;
}

export function developerRoutes(scope: FastifyInstance, deps: Deps): void {
  // API keys: created in the world the dashboard shows (live or test), secret shown once.
  page(scope, deps, '/dashboard/keys', async (ctx, request) =>
    keysPage(ctx, await listKeysAs(ctx.services.db.kysely, ctx.auth), {
      notice: notices(ctx, request.query.notice),
    }),
  );
  action(scope, deps, '/dashboard/keys', async (ctx, form, _request, reply) => {
    const db = ctx.services.db.kysely;
    const parsed = CreateKeyBody.safeParse({ name: form.get('name') ?? '', scopes: form.getAll('scopes') });
    if (!parsed.success) {
      reply.code(400);
      return keysPage(ctx, await listKeysAs(db, ctx.auth), { error: describeIssues(parsed.error) });
    }
    // Beyond the plan's keys (402) the page says so, with the keys to revoke.
    return orPageWithError(
      reply,
      async () => {
        const created = await asUserAction(ctx, 'api_key.create', 'api_key', null, () =>
          createKeyAs(db, ctx.auth, { ...parsed.data, mode: undefined }),
        );
        return keysPage(ctx, await listKeysAs(db, ctx.auth), {
          created: { name: created.name, key: created.key },
        });
      },
      async (error) => keysPage(ctx, await listKeysAs(db, ctx.auth), { error }),
    );
  });
  action<IdParams>(scope, deps, '/dashboard/keys/:id/revoke', async (ctx, _form, request, reply) => {
    await asUserAction(ctx, 'api_key.revoke', 'api_key', request.params.id, () =>
      revokeKeyAs(ctx.services.db.kysely, ctx.auth, request.params.id),
    );
    return redirect(reply, '/dashboard/keys', 'revoked');
  });

  // Webhooks.
  page(scope, deps, '/dashboard/webhooks', async (ctx, request) =>
    webhooksPage(ctx, (await listWebhooks(ctx.services, ctx.world)).webhooks, {
      notice: notices(ctx, request.query.notice),
    }),
  );
  action(scope, deps, '/dashboard/webhooks', async (ctx, form, _request, reply) => {
    const list = async () => (await listWebhooks(ctx.services, ctx.world)).webhooks;
    const parsed = CreateWebhookBody.safeParse({
      url: (form.get('url') ?? '').trim(),
      events: form.getAll('events'),
      format: form.get('format') || undefined,
    });
    if (!parsed.success) {
      reply.code(400);
      return webhooksPage(ctx, await list(), { error: describeIssues(parsed.error) });
    }
    return orPageWithError(
      reply,
      async () => {
        const created = await asUserAction(ctx, 'webhook.create', 'webhook_endpoint', null, () =>
          createWebhook(ctx.services, ctx.world, ctx.account.plan, parsed.data),
        );
        return webhooksPage(ctx, await list(), { created: { url: created.url, secret: created.secret } });
      },
      async (message) => webhooksPage(ctx, await list(), { error: message }),
    );
  });
  page<IdParams>(scope, deps, '/dashboard/webhooks/:id', async (ctx, request) =>
    webhookDetail(ctx, request.params.id, {
      notice: notices(ctx, request.query.notice),
      testedId: request.query.tested,
    }),
  );
  // Post/redirect/get: the result is read back from the delivery log, so a reload sends nothing again.
  action<IdParams>(scope, deps, '/dashboard/webhooks/:id/test', async (ctx, form, request, reply) => {
    const tested = await sendTestEvent(ctx.services, ctx.world, request.params.id, form.get('event') ?? '');
    await auditUserAction(ctx, 'webhook.test', 'webhook_endpoint', request.params.id);
    const query = new URLSearchParams({ tested: tested.id }).toString();
    return reply.redirect(`/dashboard/webhooks/${request.params.id}?${query}`, 303);
  });
  action<IdParams>(scope, deps, '/dashboard/webhooks/:id/rotate', async (ctx, _form, request) => {
    const rotated = await asUserAction(
      ctx,
      'webhook.rotate_secret',
      'webhook_endpoint',
      request.params.id,
      () => rotateSecret(ctx.services, ctx.world, request.params.id, undefined),
    );
    return webhookDetail(ctx, request.params.id, { secret: rotated.secret });
  });
  action<IdParams>(scope, deps, '/dashboard/webhooks/:id/delete', async (ctx, _form, request, reply) => {
    await asUserAction(ctx, 'webhook.delete', 'webhook_endpoint', request.params.id, () =>
      deleteWebhook(ctx.services, ctx.world, request.params.id),
    );
    return redirect(reply, '/dashboard/webhooks', 'deleted');
  });

  // The test inbox: test mode's messages; live mode's only when no SMTP server is configured.
  page(scope, deps, '/dashboard/inbox', async (ctx) => {
    const liveSmtp = ctx.services.mailer.kind === 'smtp';
    const rows =
      ctx.livemode && liveSmtp
        ? []
        : await outboxMessages(
            ctx.services.db.kysely,
            { accountId: ctx.account.id, livemode: ctx.livemode },
            { limit: 100 },
          );
    return inboxPage(
      ctx,
      rows.map((m) => ({
        id: m.id,
        channel: m.channel,
        to: m.to_address,
        subject: m.subject,
        text: m.text_body ?? '',
        hasHtml: Boolean(m.html_body),
        intakeId: m.intake_id,
        status: m.status,
        createdAt: m.created_at,
      })),
      liveSmtp,
    );
  });

  /** One email's HTML, framed by the inbox page: sandboxed, no scripts, nothing loaded from elsewhere. */
  scope.get<{ Params: IdParams }>(
    '/dashboard/inbox/:id/html',
    { schema: { hide: true } },
    async (request, reply) => {
      const ctx = await dashboardContext(deps.services, deps.assets, request, reply);
      if (!ctx) return reply;
      const message = await ctx.services.db.kysely
        .selectFrom('messages')
        .select(['html_body'])
        .where('id', '=', request.params.id)
        .where('account_id', '=', ctx.account.id)
        .where('livemode', '=', ctx.livemode ? 1 : 0)
        .where('status', 'in', ['captured', 'dropped'])
        .executeTakeFirst();
      if (!message?.html_body) throw new ApiError('not_found', 'No such message.');
      return reply
        .headers({
          ...dashboardHeaders(),
          // Still no scripts; popups only, so the email's links open in a new tab at the top level
          // (the portal refuses to be framed, so a link followed inside the frame would only fail).
          'Content-Security-Policy':
            "sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'",
          'X-Frame-Options': 'SAMEORIGIN',
        })
        .type('text/html; charset=utf-8')
        .send(framedEmail(message.html_body));
    },
  );
}
