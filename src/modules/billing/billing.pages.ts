import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isPaidPlanId, isPlanId, type PaidPlanId } from '../../domain/billing.js';
import { PLANS, planOf, type Plan } from '../../domain/plans.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import { assertCsrf, requireUser, safeReturnPath } from '../sessions/session.js';
import { acceptForms, field, sendPage } from '../oauth/page.js';
import { html, type Html } from '../portal/page/html.js';
import { LOCAL_BILLING_PATH, LocalBillingProvider } from './billing.local.js';
import type { BillingProvider } from './billing.provider.js';
import { completeBillingSession, findBillingSession, type BillingSessionRow } from './billing.repository.js';
import { changePlan } from './billing.service.js';
import { accountRow, openBillingSession, type BillingSessionRequest } from './billing.sessions.js';

/** The dashboard's billing buttons post here (session + CSRF), and are sent on to the provider. */
export const DASHBOARD_CHECKOUT_PATH = '/dashboard/billing/checkout';
export const DASHBOARD_PORTAL_PATH = '/dashboard/billing/portal';

/**
 * A button that starts a plan change from a dashboard page: POSTs to DASHBOARD_CHECKOUT_PATH, which
 * opens a checkout (local page or Stripe Checkout) and redirects the browser there. `returnTo` is the
 * dashboard path to come back to afterwards.
 */
export function planChangeForm(plan: PaidPlanId, csrf: string, returnTo = '/dashboard'): Html {
  return html`<form method="post" action="${DASHBOARD_CHECKOUT_PATH}" class="plan-change">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="plan" value="${plan}" />
    <input type="hidden" name="return_to" value="${returnTo}" />
    <button type="submit" data-plan="${plan}">Upgrade to ${planOf(plan).name}</button>
  </form>`;
}

/** A "Manage subscription" button for dashboard pages (local portal page or Stripe's Billing Portal). */
export function manageBillingForm(csrf: string, returnTo = '/dashboard'): Html {
  return html`<form method="post" action="${DASHBOARD_PORTAL_PATH}" class="manage-billing">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="return_to" value="${returnTo}" />
    <button type="submit">Manage subscription</button>
  </form>`;
}

function planSummary(plan: Plan): Html {
  return html`<ul>
    <li>${plan.rate_limit_per_hour} API requests per hour per key</li>
    <li>${plan.quotas.intakes_per_month} intakes and ${plan.quotas.sms_per_month} SMS per month</li>
    <li>${Math.round(plan.quotas.storage_bytes / 1024 ** 3)} GiB of storage</li>
  </ul>`;
}

type Problem = [status: number, message: string];

/** The session behind a local billing link, or why the link no longer works. */
async function usableSession(
  db: Kysely<Database>,
  id: string,
  now: Date,
): Promise<{ session: BillingSessionRow } | { problem: Problem }> {
  const session = await findBillingSession(db, id);
  if (!session) return { problem: [404, 'This billing link does not exist.'] };
  if (session.completed_at) return { problem: [410, 'This billing link has already been used.'] };
  if (session.expires_at <= now.toISOString()) {
    return { problem: [410, 'This billing link has expired: start again from the dashboard.'] };
  }
  return { session };
}

function problemPage(reply: FastifyReply, [status, message]: Problem): FastifyReply {
  return sendPage(
    reply,
    'Billing',
    html`<h1>Billing</h1>
      <p class="error">${message}</p>`,
    status,
  );
}

function checkoutPage(reply: FastifyReply, session: BillingSessionRow, currentPlan: string): FastifyReply {
  const plan = planOf(session.plan ?? '');
  return sendPage(
    reply,
    `Change to the ${plan.name} plan`,
    html`<h1>Change to the ${plan.name} plan</h1>
      <p>
        From ${planOf(currentPlan).name} to <strong>${plan.name}</strong>, $${plan.price_monthly_usd} per
        month:
      </p>
      ${planSummary(plan)}
      <p class="muted">Local billing provider: this service has no Stripe keys, so no payment is taken.</p>
      <form method="post" action="${LOCAL_BILLING_PATH}/${session.id}">
        <div class="actions">
          <button type="submit" name="decision" value="confirm">Confirm plan change</button>
          <a href="${session.return_url}">Cancel</a>
        </div>
      </form>`,
  );
}

function portalPage(reply: FastifyReply, session: BillingSessionRow, currentPlan: string): FastifyReply {
  const choices = Object.values(PLANS).map(
    (plan) =>
      html`<label
        ><input type="radio" name="plan" value="${plan.id}" ${plan.id === currentPlan ? html`checked` : ''} />
        ${plan.name}: $${plan.price_monthly_usd} per month, ${plan.rate_limit_per_hour} requests per
        hour</label
      >`,
  );
  return sendPage(
    reply,
    'Manage subscription',
    html`<h1>Manage subscription</h1>
      <p>Current plan: <strong>${planOf(currentPlan).name}</strong>.</p>
      <form method="post" action="${LOCAL_BILLING_PATH}/${session.id}">
        <fieldset>
          <legend>Plan</legend>
          ${choices}
        </fieldset>
        <p class="muted">Local billing provider: no payment is taken.</p>
        <div class="actions">
          <button type="submit">Save</button>
          <a href="${session.return_url}">Back</a>
        </div>
      </form>`,
  );
}

/**
 * The local provider's pages: GET shows the checkout (or portal) page, whose form POSTs back to the
 * same URL; the POST applies the plan change at once. The link's random id is its capability (as a
 * Stripe Checkout URL is), used once and for an hour, so these pages need no sign-in.
 */
export function billingPageRoutes(
  app: FastifyInstance,
  services: AppServices,
  provider: BillingProvider,
): void {
  acceptForms(app);
  const schema = { hide: true };
  const db = services.db.kysely;
  // A link made before the server lost its permission (production without BILLING_ALLOW_LOCAL) is dead.
  const localAllowed = provider instanceof LocalBillingProvider && provider.allowed;
  const refused: Problem = [404, 'This billing link does not exist.'];

  app.get<{ Params: { session_id: string } }>(
    `${LOCAL_BILLING_PATH}/:session_id`,
    { schema },
    async (request, reply) => {
      if (!localAllowed) return problemPage(reply, refused);
      const found = await usableSession(db, request.params.session_id, services.clock.now());
      if ('problem' in found) return problemPage(reply, found.problem);
      const { session } = found;
      const account = await accountRow(db, session.account_id);
      if (!account) return problemPage(reply, [404, 'This billing link does not exist.']);
      return session.kind === 'checkout'
        ? checkoutPage(reply, session, account.plan)
        : portalPage(reply, session, account.plan);
    },
  );

  app.post<{ Params: { session_id: string } }>(
    `${LOCAL_BILLING_PATH}/:session_id`,
    { schema },
    async (request, reply) => {
      if (!localAllowed) return problemPage(reply, refused);
      const now = services.clock.now();
      const found = await usableSession(db, request.params.session_id, now);
      if ('problem' in found) return problemPage(reply, found.problem);
      const { session } = found;
      const plan = session.kind === 'checkout' ? session.plan : field(request.body, 'plan');
      if (!isPlanId(plan)) return problemPage(reply, [422, 'Choose one of the plans.']);
      const at = now.toISOString();
      await changePlan(
        db,
        {
          accountId: session.account_id,
          plan,
          source: session.kind === 'checkout' ? 'local_checkout' : 'local_portal',
          requestId: request.id,
          at,
        },
        async (trx) => {
          // One use: of two submits racing, the second finds the link used and changes nothing.
          if (!(await completeBillingSession(trx, session.id, at))) {
            throw new ApiError('gone', 'This billing link has already been used.');
          }
        },
      );
      return reply.code(303).header('Location', session.return_url).send();
    },
  );

  /** What the dashboard's button asks for, or why it cannot be done. */
  const requested = (body: unknown, kind: 'checkout' | 'portal'): BillingSessionRequest | Problem => {
    const returnPath = safeReturnPath(field(body, 'return_to')) ?? '/dashboard';
    const returnUrl = `${services.config.appUrl}${returnPath}`;
    if (kind === 'portal') return { kind, returnUrl };
    const plan = field(body, 'plan');
    return isPaidPlanId(plan) ? { kind, plan, returnUrl } : [422, 'Choose the Solo or Agency plan.'];
  };

  const start = async (request: FastifyRequest, reply: FastifyReply, kind: 'checkout' | 'portal') => {
    const user = await requireUser(request, reply);
    if (!user) return reply;
    assertCsrf(request, field(request.body, '_csrf'));
    // Billing is the owner's alone (an admin manages everything else).
    if (user.role !== 'owner') return problemPage(reply, [403, 'Only the account owner manages billing.']);
    const account = await accountRow(db, user.accountId);
    if (!account) throw new ApiError('not_found', 'No such account.');
    const wanted = requested(request.body, kind);
    if (Array.isArray(wanted)) return problemPage(reply, wanted);
    let url: string;
    try {
      url = (await openBillingSession(services, provider, account, wanted)).url;
    } catch (error) {
      // A refusal (already on the plan, no subscription yet, billing not configured) is a page for a
      // person, not JSON.
      if (error instanceof ApiError && (error.status < 500 || error.code === 'service_unavailable'))
        return problemPage(reply, [error.status, error.message]);
      throw error;
    }
    await insertAuditEntry(db, {
      account_id: account.id,
      livemode: 1,
      action: `billing.${kind}`,
      resource_type: 'account',
      resource_id: account.id,
      actor_type: 'user',
      actor_id: user.userId,
      request_id: request.id,
      created_at: services.clock.now().toISOString(),
    });
    return reply.code(303).header('Location', url).send();
  };
  app.post(DASHBOARD_CHECKOUT_PATH, { schema }, (request, reply) => start(request, reply, 'checkout'));
  app.post(DASHBOARD_PORTAL_PATH, { schema }, (request, reply) => start(request, reply, 'portal'));
}
