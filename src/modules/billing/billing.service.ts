import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { planOf, type PlanId } from '../../domain/plans.js';
import { notFound } from '../../http/errors.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import { emitEvent } from '../../kernel/public-events.js';

export interface PlanChange {
  accountId: string;
  plan: PlanId;
  /** What caused it, for the audit log and the event: the local checkout page or a Stripe webhook. */
  source: 'local_checkout' | 'local_portal' | 'stripe';
  requestId: string | null;
  at: string;
}

export interface PlanChangeResult {
  changed: boolean;
  previousPlan: string;
  plan: PlanId;
}

/**
 * Moves an account to a plan. Limits follow at once: the rate limiter, quotas and feature checks all
 * read the account's plan on every request. The change, its audit entry and its account event
 * (`account.plan_changed`, live world) commit together; a repeated notice (Stripe retries webhooks)
 * for the plan the account is already on changes and records nothing (the provider records still
 * update).
 */
export async function changePlan(
  db: Kysely<Database>,
  change: PlanChange,
  /** Provider records to write in the same transaction (customer and subscription ids). */
  alongside?: (trx: Kysely<Database>) => Promise<void>,
): Promise<PlanChangeResult> {
  return db.transaction().execute(async (trx) => {
    if (alongside) await alongside(trx);
    const account = await trx
      .selectFrom('accounts')
      .select(['id', 'plan'])
      .where('id', '=', change.accountId)
      .executeTakeFirst();
    if (!account) throw notFound('account', change.accountId);
    const previousPlan = account.plan;
    if (previousPlan === change.plan) return { changed: false, previousPlan, plan: change.plan };
    await trx.updateTable('accounts').set({ plan: change.plan }).where('id', '=', account.id).execute();
    await insertAuditEntry(trx, {
      account_id: account.id,
      livemode: 1,
      action: 'account.plan_changed',
      resource_type: 'account',
      resource_id: account.id,
      actor_type: 'system',
      actor_id: `billing:${change.source}`,
      request_id: change.requestId,
      created_at: change.at,
    });
    await emitEvent(trx, {
      accountId: account.id,
      livemode: true,
      type: 'account.plan_changed',
      intakeId: null,
      data: {
        account_id: account.id,
        previous_plan: previousPlan,
        plan: change.plan,
        rate_limit_per_hour: planOf(change.plan).rate_limit_per_hour,
        source: change.source,
      },
      occurredAt: change.at,
    });
    return { changed: true, previousPlan, plan: change.plan };
  });
}
