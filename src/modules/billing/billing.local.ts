import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
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
 */
export class LocalBillingProvider implements BillingProvider {
  readonly kind = 'local';

  constructor(
    private readonly db: Kysely<Database>,
    /** Read at each request: with PORT=0 the address is known only once the server listens. */
    private readonly config: { appUrl: string },
  ) {}

  checkout(request: BillingRequest & { plan: 'solo' | 'agency' }): Promise<{ url: string }> {
    return this.session('checkout', request, request.plan);
  }

  portal(request: BillingRequest): Promise<{ url: string }> {
    return this.session('portal', request, null);
  }

  private async session(
    kind: 'checkout' | 'portal',
    request: BillingRequest,
    plan: string | null,
  ): Promise<{ url: string }> {
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
