/**
 * The one place the service reads its plan limits from: rate limits, quotas, file sizes and features.
 * /pricing.json, /v1/usage, the rate limiter and the quota checks all read this table.
 */
export const PLAN_IDS = ['free', 'solo', 'agency'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

export interface Plan {
  id: PlanId;
  name: string;
  price_monthly_usd: number;
  rate_limit_per_hour: number;
  /** seats: the people (invited or active) who may sign in to the account. */
  quotas: { intakes_per_month: number; storage_bytes: number; sms_per_month: number; seats: number };
  /** The account's hard limit for one uploaded file, whatever an item's max_bytes says. */
  max_file_bytes: number;
  features: {
    templates: boolean;
    webhooks: boolean;
    sms_chases: boolean;
    custom_chase_schedules: boolean;
    custom_branding: boolean;
    max_webhook_endpoints: number;
    /** Templates an account (each mode) may keep. */
    max_templates: number;
    /** API keys (live and test, not revoked) an account may hold; OAuth access tokens, which expire within the hour, aside. */
    max_api_keys: number;
  };
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const PLANS: Readonly<Record<PlanId, Plan>> = {
  free: {
    id: 'free',
    name: 'Free',
    price_monthly_usd: 0,
    rate_limit_per_hour: 60,
    quotas: { intakes_per_month: 5, storage_bytes: 1 * GiB, sms_per_month: 0, seats: 1 },
    max_file_bytes: 100 * MiB,
    features: {
      templates: true,
      webhooks: true,
      sms_chases: false,
      custom_chase_schedules: false,
      custom_branding: false,
      max_webhook_endpoints: 2,
      max_templates: 10,
      max_api_keys: 5,
    },
  },
  solo: {
    id: 'solo',
    name: 'Solo',
    price_monthly_usd: 29,
    rate_limit_per_hour: 600,
    quotas: { intakes_per_month: 100, storage_bytes: 50 * GiB, sms_per_month: 100, seats: 3 },
    max_file_bytes: 2 * GiB,
    features: {
      templates: true,
      webhooks: true,
      sms_chases: true,
      custom_chase_schedules: true,
      custom_branding: false,
      max_webhook_endpoints: 10,
      max_templates: 100,
      max_api_keys: 25,
    },
  },
  agency: {
    id: 'agency',
    name: 'Agency',
    price_monthly_usd: 99,
    rate_limit_per_hour: 3000,
    quotas: { intakes_per_month: 1000, storage_bytes: 500 * GiB, sms_per_month: 1000, seats: 10 },
    max_file_bytes: 5 * GiB,
    features: {
      templates: true,
      webhooks: true,
      sms_chases: true,
      custom_chase_schedules: true,
      custom_branding: true,
      max_webhook_endpoints: 50,
      max_templates: 500,
      max_api_keys: 100,
    },
  },
};

export function planOf(id: string): Plan {
  // Own keys only: an inherited name such as "constructor" is not a plan.
  return Object.hasOwn(PLANS, id) ? PLANS[id as PlanId] : PLANS.free;
}

/** The requests per hour an account's keys get: its contract override, else its plan's. */
export function rateLimitFor(account: { plan: string; rate_limit_per_hour: number | null }): number {
  return account.rate_limit_per_hour ?? planOf(account.plan).rate_limit_per_hour;
}

/**
 * Test mode's file storage: counted apart from live files, and at most 1 GiB whatever the plan
 * (test data is for trying the integration, not for keeping files).
 */
export const TEST_MODE_STORAGE_BYTES = 1 * GiB;

export function storageQuota(plan: Plan, livemode: boolean): number {
  return livemode ? plan.quotas.storage_bytes : Math.min(plan.quotas.storage_bytes, TEST_MODE_STORAGE_BYTES);
}
