import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import type { BillingProvider, BillingRequest } from './billing.provider.js';
import { insertBillingSession } from './billing.repository.js';

/** How long a local checkout or portal link stays usable. */
export const LOCAL_SESSION_TTL_MS = 60 * 60 * 1000;

export const LOCAL_BILLING_PATH = '/billing/local';

/**
 * The provider used without Stripe keys: a checkout or portal "session" is a row whose random id is
 * the capability of a page on this service (`/billing/local/:id`). The page's form POSTs back to the
 * same URL and the POST applies the plan change at once; no payment is taken.
 *
 * Because anyone with an account could take any plan for free, it serves only where that is wanted:
 * outside production, or with BILLING_ALLOW_LOCAL=on. Otherwise (production without Stripe keys)
 * checkout and portal answer 503 and its pages change nothing.
 */
export class LocalBillingProvider implements BillingProvider {
  readonly kind = 'local';

  constructor(
    private readonly db: Kysely<Database>,
    /** Read at each request: with PORT=0 the address is known only once the server listens. */
    private readonly config: { appUrl: string },
    /** Plan changes without payment are allowed here (not production, or BILLING_ALLOW_LOCAL=on). */
    readonly allowed: boolean,
  ) {}

  checkout(request: BillingRequest & { plan: 'solo' | 'agency' }): Promise<{ url: string }> {
    return this.session('checkout', request, request.plan);
  }

  portal(request: BillingRequest): Promise<{ url: string }> {
    return this.session('portal', request, null);
  }

  /** Throws 503 unless plan changes without payment are allowed on this server. */
  assertAllowed(): void {
    if (this.allowed) return;
    throw new ApiError(
      'service_unavailable',
      'Billing is not configured on this server: the operator sets STRIPE_SECRET_KEY (and STRIPE_WEBHOOK_SECRET) to take payments. Plan changes without payment are off in production unless BILLING_ALLOW_LOCAL=on.',
    );
  }

  private async session(
    kind: 'checkout' | 'portal',
    request: BillingRequest,
    plan: string | null,
  ): Promise<{ url: string }> {
    this.assertAllowed();
    const id = newId(kind === 'checkout' ? 'bcs' : 'bps');
    await insertBillingSession(this.db, {
      id,
      account_id: request.account.id,
      kind,
      plan,
      return_url: request.returnUrl,
      created_at: request.at.toISOString(),
      expires_at: new Date(request.at.getTime() + LOCAL_SESSION_TTL_MS).toISOString(),
      completed_at: null,
    });
    return { url: `${this.config.appUrl}${LOCAL_BILLING_PATH}/${id}` };
  }
}
