import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { Timestamp, optional } from '../../http/schemas.js';
import { translator } from '../../i18n/index.js';
import { constantTimeEqual } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { findIntakeById } from '../intakes/intakes.service.js';
import { escapeHtml } from '../notify/notify.templates.js';
import { verifySignature } from '../webhooks/verify.js';
import { applyReportedBounce, optOut, optOutSignature } from './chases.service.js';

/**
 * What comes back from the people we chase: providers' bounce and complaint reports, and the opt-out
 * link of every reminder.
 */

/** Provider reports of hard bounces and spam complaints, signed like our webhooks. */
export const EmailEventBody = z.strictObject({
  type: z.enum(['bounce', 'complaint']),
  bounce_type: optional(z.enum(['hard', 'soft'])),
  message_id: z.string().min(1).max(300),
  email: optional(z.string().max(254)),
  reason: optional(z.string().max(1000)),
  occurred_at: optional(Timestamp),
});

/** Our message id (msg_…) from either it or a Message-ID header value `<msg_…@domain>`. */
function ourMessageId(value: string): string {
  return value.replace(/^</, '').replace(/>$/, '').split('@')[0] ?? value;
}

export async function chasesInboundRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  // Raw bodies: the inbound signature covers the exact bytes, and the opt-out form is urlencoded.
  await app.register((scope, _options, done) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      done(null, body);
    });
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_request, body, done) => done(null, body),
    );

    scope.post('/v1/inbound/email-events', {
      schema: {
        tags: ['Inbound'],
        summary: 'Report bounces and spam complaints',
        description:
          'For email providers (or a relay that reads DSNs). Body: {type: bounce|complaint, bounce_type?: hard|soft, message_id: the msg_… id or Message-ID of our email, email?, reason?, occurred_at?}. Signed with BOUNCE_WEBHOOK_SECRET like our webhooks: header X-Service-Signature (or Service-Signature) `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, 300 seconds tolerance; 400 when the signature fails. A hard bounce or complaint suppresses the address and, for a reminder, marks the chase bounced and raises chase.bounced. 404 when BOUNCE_WEBHOOK_SECRET is not set.',
        body: z.unknown(),
      },
      handler: async (request, reply) => {
        const secret = services.config.bounceWebhookSecret;
        if (!secret) {
          throw new ApiError('not_found', 'Inbound email events are not enabled: set BOUNCE_WEBHOOK_SECRET.');
        }
        const raw = typeof request.body === 'string' ? request.body : '';
        // Providers sign like our outgoing webhooks: one verifier for both directions.
        const header = request.headers['x-service-signature'] ?? request.headers['service-signature'];
        const nowSeconds = Math.floor(services.clock.now().getTime() / 1000);
        if (!verifySignature(raw, header, secret, { nowSeconds })) {
          throw new ApiError(
            'invalid_request',
            'The signature is missing, wrong or outside the 300-second tolerance.',
          );
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          throw new ApiError('invalid_request', 'The body must be JSON.');
        }
        const event = EmailEventBody.safeParse(parsed);
        if (!event.success) {
          throw new ApiError(
            'invalid_request',
            event.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
          );
        }
        const body = event.data;
        if (body.type === 'bounce' && body.bounce_type === 'soft') {
          return reply.send({ received: true, action: 'ignored' });
        }
        const action = await applyReportedBounce(services, {
          messageId: ourMessageId(body.message_id),
          reason: body.type === 'complaint' ? 'spam_complaint' : 'hard_bounce',
          detail: body.reason ?? null,
        });
        return reply.send({ received: true, action });
      },
    });

    const OptOutParams = z.object({ id: z.string().min(1).max(64) });
    // r: an also_notify recipient's id (their own link); absent for the client's.
    const OptOutQuery = z.object({ sig: z.string().max(64).optional(), r: z.string().max(64).optional() });

    async function optOutTarget(params: unknown, query: unknown) {
      const id = OptOutParams.safeParse(params);
      const sig = OptOutQuery.safeParse(query);
      if (!id.success || !sig.success) return undefined;
      const intake = await findIntakeById(services.db.kysely, id.data.id);
      const recipientId = sig.data.r ?? null;
      if (
        !intake ||
        !constantTimeEqual(sig.data.sig ?? '', optOutSignature(services, intake.id, recipientId))
      )
        return undefined;
      return { ...intake, recipientId };
    }

    function page(reply: FastifyReply, status: number, language: string, title: string, body: string) {
      return reply
        .code(status)
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send(
          `<!doctype html><html lang="${escapeHtml(language)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title></head><body style="font-family:system-ui,sans-serif;max-width:520px;margin:48px auto;padding:0 16px;line-height:1.5">${body}</body></html>`,
        );
    }

    function notFoundPage(reply: FastifyReply) {
      const invalid = translator('en', 'email')('optout_page.invalid');
      return page(reply, 404, 'en', 'Not found', `<p>${escapeHtml(invalid)}</p>`);
    }

    // GET only shows a button (link scanners must not opt anyone out); POST (also RFC 8058 one-click) acts.
    scope.get('/optout/:id', { schema: { hide: true } }, async (request, reply) => {
      const intake = await optOutTarget(request.params, request.query);
      if (!intake) return notFoundPage(reply);
      const t = translator(intake.client_language, 'email');
      const who = intake.recipientId ? `r=${encodeURIComponent(intake.recipientId)}&` : '';
      const action = `/optout/${encodeURIComponent(intake.id)}?${who}sig=${optOutSignature(services, intake.id, intake.recipientId)}`;
      return page(
        reply,
        200,
        intake.client_language,
        t('optout_page.title'),
        `<h1>${escapeHtml(t('optout_page.title'))}</h1><p>${escapeHtml(t('optout_page.question', { project: intake.project_name }))}</p><form method="post" action="${escapeHtml(action)}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">${escapeHtml(t('optout_page.confirm'))}</button></form>`,
      );
    });

    scope.post('/optout/:id', { schema: { hide: true } }, async (request, reply) => {
      const intake = await optOutTarget(request.params, request.query);
      if (!intake) return notFoundPage(reply);
      await optOut(services, intake.id, intake.recipientId);
      const t = translator(intake.client_language, 'email');
      return page(
        reply,
        200,
        intake.client_language,
        t('optout_page.title'),
        `<p>${escapeHtml(t('optout_page.done', { project: intake.project_name }))}</p>`,
      );
    });
    done();
  });
}
