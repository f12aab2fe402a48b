import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { StripeConfig } from '../../config.js';
import type { Database } from '../../db/schema.js';
import {
  isPlanId,
  planForSubscription,
  subscriptionKeepsPlan,
  type PaidPlanId,
} from '../../domain/billing.js';
import { planOf, type PlanId } from '../../domain/plans.js';
import { ApiError, conflict } from '../../http/errors.js';
import type { BillingProvider, BillingRequest } from './billing.provider.js';
import { accountIdByCustomer, billingOf, saveBilling } from './billing.repository.js';
import { changePlan, type PlanChangeResult } from './billing.service.js';
import { onFirstUse } from '../../lib/on-first-use.js';

const loadStripe = onFirstUse<typeof Stripe>('stripe');

/**
 * The Stripe client; STRIPE_API_URL points it elsewhere (stripe-mock, a loopback double in tests). Its
 * library is loaded here, by the first client made (only with STRIPE_SECRET_KEY set): a service on the
 * local provider never loads it (about 6 MB of resident memory).
 */
export function stripeClient(config: StripeConfig & { secretKey: string }): Stripe {
  const api = config.apiUrl ? new URL(config.apiUrl) : undefined;
  const StripeLibrary = loadStripe();
  return new StripeLibrary(config.secretKey, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
    ...(api
      ? {
          host: api.hostname,
          port: api.port || (api.protocol === 'http:' ? 80 : 443),
          protocol: api.protocol === 'http:' ? 'http' : 'https',
        }
      : {}),
  });
}

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  typeof value === 'string' ? value : (value?.id ?? null);

/** Real Stripe Checkout (subscription mode) and Billing Portal sessions. */
export class StripeBillingProvider implements BillingProvider {
  readonly kind = 'stripe';

  constructor(
    private readonly db: Kysely<Database>,
    private readonly stripe: Stripe,
    private readonly config: StripeConfig,
  ) {}

  async checkout(request: BillingRequest & { plan: PaidPlanId }): Promise<{ url: string }> {
    const { account, plan } = request;
    const billing = await billingOf(this.db, account.id);
    if (billing?.subscription_id && subscriptionKeepsPlan(billing.subscription_status)) {
      // A second Checkout would start a second subscription: plan switches happen in the portal.
      throw conflict(
        'The account already has a subscription: change its plan through POST /v1/billing/portal.',
      );
    }
    const priceId = this.config.priceIds[plan];
    const session = await this.stripe.checkout.sessions.create({
      mode: 'subscription',
      line_items: [
        priceId
          ? { price: priceId, quantity: 1 }
          : {
              // No price configured: price the plan from the plan table (the same numbers as /pricing.json).
              price_data: {
                currency: 'usd',
                unit_amount: planOf(plan).price_monthly_usd * 100,
                recurring: { interval: 'month' },
                product_data: { name: `${planOf(plan).name} plan` },
              },
              quantity: 1,
            },
      ],
      success_url: request.returnUrl,
      cancel_url: request.returnUrl,
      client_reference_id: account.id,
      ...(billing?.customer_id ? { customer: billing.customer_id } : { customer_email: account.email }),
      metadata: { account_id: account.id, plan },
      subscription_data: { metadata: { account_id: account.id, plan } },
    });
    if (!session.url)
      throw new ApiError('internal_error', 'Stripe returned a Checkout session without a URL.');
    return { url: session.url };
  }

  async portal(request: BillingRequest): Promise<{ url: string }> {
    const billing = await billingOf(this.db, request.account.id);
    if (!billing?.customer_id) {
      throw conflict('The account has no Stripe subscription yet: start one with POST /v1/billing/checkout.');
    }
    const session = await this.stripe.billingPortal.sessions.create({
      customer: billing.customer_id,
      return_url: request.returnUrl,
    });
    return { url: session.url };
  }

  /** The plan a subscription is for: its price (configured ids, then lookup_key), else its metadata. */
  planOfSubscription(subscription: Stripe.Subscription): PlanId | undefined {
    const price = subscription.items.data[0]?.price;
    const byConfig = (Object.entries(this.config.priceIds) as [PaidPlanId, string | undefined][]).find(
      ([, id]) => id !== undefined && id === price?.id,
    )?.[0];
    if (byConfig) return byConfig;
    if (isPlanId(price?.lookup_key)) return price.lookup_key;
    const fromMetadata = subscription.metadata.plan;
    return isPlanId(fromMetadata) ? fromMetadata : undefined;
  }
}

export interface WebhookOutcome {
  handled: boolean;
  accountId?: string;
  change?: PlanChangeResult;
}

async function accountExists(
  db: Kysely<Database>,
  id: string | null | undefined,
): Promise<string | undefined> {
  if (!id) return undefined;
  const row = await db.selectFrom('accounts').select('id').where('id', '=', id).executeTakeFirst();
  return row?.id;
}

/**
 * Applies a verified Stripe event: checkout.session.completed starts the subscription's plan;
 * customer.subscription.updated/deleted follow its status and price. Events for other accounts'
 * or unknown objects are acknowledged and ignored (Stripe would otherwise retry them for days).
 */
export async function applyStripeEvent(
  db: Kysely<Database>,
  provider: StripeBillingProvider,
  event: Stripe.Event,
  context: { requestId: string; at: string },
): Promise<WebhookOutcome> {
  const base = { source: 'stripe' as const, requestId: context.requestId, at: context.at };
  if (event.type === 'checkout.session.completed') {
    const session = event.data.object;
    const plan = session.metadata?.plan;
    const accountId = await accountExists(db, session.client_reference_id ?? session.metadata?.account_id);
    if (session.mode !== 'subscription' || !accountId || !isPlanId(plan)) return { handled: false };
    const change = await changePlan(db, { ...base, accountId, plan }, (trx) =>
      saveBilling(trx, {
        account_id: accountId,
        provider: 'stripe',
        customer_id: idOf(session.customer),
        subscription_id: idOf(session.subscription),
        subscription_status: 'active',
        updated_at: context.at,
      }),
    );
    return { handled: true, accountId, change };
  }
  if (event.type === 'customer.subscription.updated' || event.type === 'customer.subscription.deleted') {
    const subscription = event.data.object;
    const customerId = idOf(subscription.customer);
    const accountId =
      (await accountExists(db, subscription.metadata.account_id)) ??
      (customerId ? await accountIdByCustomer(db, customerId) : undefined);
    if (!accountId) return { handled: false };
    const current = await billingOf(db, accountId);
    // Only the current subscription decides the plan: news of an older one (replaced in the meantime,
    // e.g. its cancellation) does not undo the plan of the one that replaced it.
    if (
      current?.subscription_id &&
      current.subscription_id !== subscription.id &&
      subscriptionKeepsPlan(current.subscription_status)
    ) {
      return { handled: false, accountId };
    }
    const status = event.type === 'customer.subscription.deleted' ? 'canceled' : subscription.status;
    const plan = planForSubscription(status, provider.planOfSubscription(subscription));
    const change = await changePlan(db, { ...base, accountId, plan }, (trx) =>
      saveBilling(trx, {
        account_id: accountId,
        provider: 'stripe',
        customer_id: customerId,
        subscription_id: subscription.id,
        subscription_status: status,
        updated_at: context.at,
      }),
    );
    return { handled: true, accountId, change };
  }
  return { handled: false };
}
