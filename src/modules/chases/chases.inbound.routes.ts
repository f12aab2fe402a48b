import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { Timestamp, optional } from '../../http/schemas.js';
import { supportedLanguage, translator } from '../../i18n/index.js';
import { constantTimeEqual } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { findIntakeById } from '../intakes/intakes.service.js';
import { senderOf } from '../notify/notify.service.js';
import { pageLanguage } from '../portal/page/language.js';
import { sendNoticePage } from '../portal/notice-page.js';
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

    // The opt-out pages speak the language of the reminder that linked to them, in the portal's look.
    function notFoundPage(reply: FastifyReply, acceptLanguage: string | undefined) {
      const language = pageLanguage({ acceptLanguage }, null);
      const t = translator(language, 'email');
      return sendNoticePage(services, reply, {
        status: 404,
        language,
        intake: null,
        content: { title: t('optout_page.invalid_title'), paragraphs: [t('optout_page.invalid')] },
      });
    }

    // GET only shows a button (link scanners must not opt anyone out); POST (also RFC 8058 one-click) acts.
    scope.get('/optout/:id', { schema: { hide: true } }, async (request, reply) => {
      const intake = await optOutTarget(request.params, request.query);
      if (!intake) return notFoundPage(reply, request.headers['accept-language']);
      const language = supportedLanguage(intake.client_language);
      const t = translator(language, 'email');
      const who = intake.recipientId ? `r=${encodeURIComponent(intake.recipientId)}&` : '';
      const action = `/optout/${encodeURIComponent(intake.id)}?${who}sig=${optOutSignature(services, intake.id, intake.recipientId)}`;
      const sender = await senderOf(services.db.kysely, intake.account_id);
      return sendNoticePage(services, reply, {
        status: 200,
        language,
        intake,
        content: {
          title: t('optout_page.question', { project: intake.project_name }),
          paragraphs: [t('optout_page.explain', { account: sender.name })],
          form: { action, button: t('optout_page.confirm'), fields: { 'List-Unsubscribe': 'One-Click' } },
          icon: 'alert',
        },
      });
    });

    scope.post('/optout/:id', { schema: { hide: true } }, async (request, reply) => {
      const intake = await optOutTarget(request.params, request.query);
      if (!intake) return notFoundPage(reply, request.headers['accept-language']);
      await optOut(services, intake.id, intake.recipientId);
      const language = supportedLanguage(intake.client_language);
      const t = translator(language, 'email');
      return sendNoticePage(services, reply, {
        status: 200,
        language,
        intake,
        content: {
          title: t('optout_page.done_title'),
          paragraphs: [t('optout_page.done', { project: intake.project_name }), t('optout_page.done_portal')],
          link: { href: `/portal/${encodeURIComponent(intake.id)}`, label: t('optout_page.open_portal') },
          icon: 'check',
        },
      });
    });
    done();
  });
}
