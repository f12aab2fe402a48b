import { z } from 'zod';
import { PAID_PLAN_IDS } from '../../domain/billing.js';
import { optional } from '../../http/schemas.js';

const ReturnUrl = optional(
  z.url().meta({
    description:
      "Where the provider's page sends the browser afterwards; on APP_URL. Default: the dashboard.",
  }),
);

export const CheckoutBody = z
  .strictObject({
    plan: z.enum(PAID_PLAN_IDS).meta({ description: 'The plan to buy (see /pricing.json)' }),
    return_url: ReturnUrl,
  })
  .meta({ id: 'CheckoutRequest' });

export const PortalBody = z.strictObject({ return_url: ReturnUrl }).meta({ id: 'PortalRequest' });

export const BillingSession = z
  .object({
    url: z.url().meta({ description: "The page to open in the account holder's browser" }),
    provider: z.enum(['stripe', 'local']).meta({
      description:
        'stripe with STRIPE_SECRET_KEY set; otherwise the built-in local provider, which takes no payment',
    }),
  })
  .meta({ id: 'BillingSession' });

export const StripeWebhookAnswer = z.object({ received: z.literal(true), handled: z.boolean() });
