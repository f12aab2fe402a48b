import type { PaidPlanId } from '../../domain/billing.js';
import type { AccountRow } from '../keys/keys.repository.js';

export interface BillingRequest {
  account: AccountRow;
  /** Where the provider's page sends the browser back to when done or cancelled. */
  returnUrl: string;
  at: Date;
}

/**
 * Where checkout and subscription management happen. Stripe when STRIPE_SECRET_KEY is set; otherwise
 * the local provider, whose own pages complete a change at once, so the whole flow works on a laptop.
 * Both answer with a URL the account holder's browser opens.
 */
export interface BillingProvider {
  readonly kind: 'stripe' | 'local';
  checkout(request: BillingRequest & { plan: PaidPlanId }): Promise<{ url: string }>;
  portal(request: BillingRequest): Promise<{ url: string }>;
}
