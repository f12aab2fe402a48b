import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type Stripe from 'stripe';
import { authOf } from '../../http/auth.js';
import { ApiError, invalid } from '../../http/errors.js';
import { ErrorBody } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import type { BillingProvider } from './billing.provider.js';
import { billingPageRoutes } from './billing.pages.js';
import { BillingSession, CheckoutBody, PortalBody, StripeWebhookAnswer } from './billing.schemas.js';
import { chooseBillingProvider, openBillingSession } from './billing.sessions.js';
import { applyStripeEvent, StripeBillingProvider, stripeClient } from './billing.stripe.js';

function liveOnly(livemode: boolean): void {
  // The plan is the account's, not a world's: test keys (handed to development setups) cannot buy one.
  if (!livemode)
    throw new ApiError('forbidden', 'Billing needs a live key (svc_live_…): plans belong to the account.');
}

/** POST /v1/billing/checkout and /portal, Stripe's webhook, and the local provider's pages. */
export async function billingRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const provider = chooseBillingProvider(services);
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post('/v1/billing/checkout', {
    config: {
      scope: 'admin',
      ownerOnly: true,
      audit: { action: 'billing.checkout', resourceType: 'account' },
    },
    schema: {
      tags: ['Account'],
      summary: 'Start a checkout to change the plan',
      description:
        "Answers with the URL of a checkout page: Stripe Checkout (subscription mode) when the service has STRIPE_SECRET_KEY, otherwise the built-in local provider's page, whose form applies the change at once without payment (in production only with BILLING_ALLOW_LOCAL=on; otherwise 503). The new plan's limits apply as soon as the change completes. 409 when the account is already on that plan or (Stripe) already has a subscription: use the portal. Live keys only.",
      body: CheckoutBody,
      // 503: production without Stripe keys, where the local provider is off (BILLING_ALLOW_LOCAL).
      response: { 200: BillingSession, 503: ErrorBody },
    },
    handler: async (request) => {
      const auth = authOf(request);
      liveOnly(auth.livemode);
      return openBillingSession(services, provider, auth.account, {
        kind: 'checkout',
        plan: request.body.plan,
        returnUrl: request.body.return_url,
      });
    },
  });

  api.post('/v1/billing/portal', {
    config: {
      scope: 'admin',
      ownerOnly: true,
      audit: { action: 'billing.portal', resourceType: 'account' },
    },
    schema: {
      tags: ['Account'],
      summary: 'Open subscription management',
      description:
        "Answers with the URL of a subscription-management page: Stripe's Billing Portal (409 before a first checkout), or the local provider's page, where any plan can be chosen, free included (in production only with BILLING_ALLOW_LOCAL=on; otherwise 503). Live keys only.",
      body: PortalBody.nullish(),
      // 503: production without Stripe keys, where the local provider is off (BILLING_ALLOW_LOCAL).
      response: { 200: BillingSession, 503: ErrorBody },
    },
    handler: async (request) => {
      const auth = authOf(request);
      liveOnly(auth.livemode);
      return openBillingSession(services, provider, auth.account, {
        kind: 'portal',
        returnUrl: request.body?.return_url,
      });
    },
  });

  // Each in its own plugin context: their body parsers (raw JSON, forms) stay theirs.
  await app.register((child, _options, done) => {
    stripeWebhookRoute(child, services, provider);
    done();
  });
  await app.register((child, _options, done) => {
    billingPageRoutes(child, services, provider);
    done();
  });
}

/** Stripe signs the exact bytes it sent, so this route keeps JSON bodies raw. */
function stripeWebhookRoute(app: FastifyInstance, services: AppServices, provider: BillingProvider): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  const { webhookSecret, secretKey } = services.config.stripe;
  // Only the signature check needs the client; it makes no API call.
  const stripe: Stripe | undefined = secretKey
    ? stripeClient({ ...services.config.stripe, secretKey })
    : undefined;

  app.withTypeProvider<ZodTypeProvider>().post('/v1/billing/stripe_webhook', {
    schema: {
      tags: ['Account'],
      summary: "Stripe's webhook (checkout and subscription events)",
      description:
        "For Stripe only: verifies the Stripe-Signature header with STRIPE_WEBHOOK_SECRET over the raw body (400 when it does not match or is older than 5 minutes) and applies checkout.session.completed, customer.subscription.updated and customer.subscription.deleted to the account's plan. Other events are acknowledged and ignored. 404 when Stripe is not configured.",
      response: { 200: StripeWebhookAnswer },
    },
    handler: async (request) => {
      if (!stripe || !webhookSecret || !(provider instanceof StripeBillingProvider)) {
        throw new ApiError(
          'not_found',
          'Stripe billing is not configured on this service (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET).',
        );
      }
      const signature = request.headers['stripe-signature'];
      if (!Buffer.isBuffer(request.body) || typeof signature !== 'string') {
        throw invalid('Send the Stripe event as its raw JSON body with its Stripe-Signature header.');
      }
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(request.body, signature, webhookSecret);
      } catch {
        throw invalid('Invalid Stripe-Signature: the event is not from Stripe, was altered, or is too old.');
      }
      const outcome = await applyStripeEvent(services.db.kysely, provider, event, {
        requestId: request.id,
        at: services.clock.now().toISOString(),
      });
      request.log.info(
        { stripe_event: event.id, type: event.type, handled: outcome.handled, account_id: outcome.accountId },
        'stripe event',
      );
      return { received: true as const, handled: outcome.handled };
    },
  });
}
