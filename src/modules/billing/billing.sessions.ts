import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { PaidPlanId } from '../../domain/billing.js';
import { planOf } from '../../domain/plans.js';
import { conflict, invalid } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import type { AccountRow } from '../keys/keys.repository.js';
import { LocalBillingProvider } from './billing.local.js';
import type { BillingProvider } from './billing.provider.js';
import { StripeBillingProvider, stripeClient } from './billing.stripe.js';

/**
 * Stripe when STRIPE_SECRET_KEY is set, else the local provider (which refuses to serve in production
 * unless BILLING_ALLOW_LOCAL=on). Chosen once per app.
 */
export function chooseBillingProvider(services: AppServices): BillingProvider {
  const { stripe } = services.config;
  if (stripe.secretKey) {
    return new StripeBillingProvider(
      services.db.kysely,
      stripeClient({ ...stripe, secretKey: stripe.secretKey }),
      stripe,
    );
  }
  return new LocalBillingProvider(services.db.kysely, services.config, services.config.billingAllowLocal);
}

/** Where the provider's page returns to: a URL on APP_URL (no open redirect), by default the dashboard. */
export function billingReturnUrl(appUrl: string, requested: string | undefined): string {
  if (requested === undefined) return `${appUrl}/dashboard`;
  const target = new URL(requested);
  if (target.origin !== new URL(appUrl).origin) {
    throw invalid(`return_url must be an address on ${appUrl}.`);
  }
  return target.toString();
}

export type BillingSessionRequest =
  | { kind: 'checkout'; plan: PaidPlanId; returnUrl: string | undefined }
  | { kind: 'portal'; returnUrl: string | undefined };

/** A checkout or portal session at the provider for an account (REST and the dashboard's buttons). */
export async function openBillingSession(
  services: AppServices,
  provider: BillingProvider,
  account: AccountRow,
  request: BillingSessionRequest,
): Promise<{ url: string; provider: BillingProvider['kind'] }> {
  const returnUrl = billingReturnUrl(services.config.appUrl, request.returnUrl);
  const at = services.clock.now();
  if (request.kind === 'portal') {
    return { ...(await provider.portal({ account, returnUrl, at })), provider: provider.kind };
  }
  if (account.plan === request.plan) {
    throw conflict(`The account is already on the ${planOf(request.plan).name} plan.`);
  }
  return {
    ...(await provider.checkout({ account, plan: request.plan, returnUrl, at })),
    provider: provider.kind,
  };
}

export async function accountRow(db: Kysely<Database>, accountId: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
}
