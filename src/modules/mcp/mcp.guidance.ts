import { POLL_AT_MOST_EVERY_SECONDS } from '../../domain/follow-up.js';
import { PLANS, PLAN_IDS } from '../../domain/plans.js';

/**
 * What an agent needs to know to use the tools well, written once and quoted by the tool
 * descriptions and the server's instructions.
 */

function interval(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60} minutes` : `${seconds} seconds`;
}

const perPlan = PLAN_IDS.map(
  (plan) => `every ${interval(POLL_AT_MOST_EVERY_SECONDS[plan])} on the ${PLANS[plan].name} plan`,
).join(', ');

export const POLLING = `Poll an intake at most once ${perPlan} (each API key has its own rolling 60-minute request budget; a rate_limited error says how many seconds to wait). Webhooks are preferable to polling: an endpoint registered with manage_webhook (POST /v1/webhooks) for item.submitted and intake.completed is called the moment the client acts, so check again only when one arrives.`;

/** For tools that send the client an email. */
export function emailsClient(what: string): string {
  return `With a live key (svc_live_…) this emails the client ${what}. With a test key (svc_test_…) nothing ever reaches the client: the email goes to the account's test outbox.`;
}

export const ID_ALIAS = 'Intake ids look like in_…; the int_… form seen in webhook payloads is accepted too.';

export const SERVER_INSTRUCTIONS = [
  'Collect files, images, texts, structured answers and credentials from a client through a portal link.',
  'Typical flow: define_intake (creates the intake and emails the client the portal link; an identical retry within 24 hours returns the first intake) → wait for the client (manage_webhook registers a webhook; else get_intake_status now and then) → get_intake_results → approve_item or request_revision per submitted item → send_chase when the client is slow.',
  'Annotations are honest: get_intake_results is not read-only (it shows each secret once, moves the only_new cursor and may start a purge); tools marked destructive drop or overwrite data, so confirm those with the user.',
  POLLING,
  'Every tool is one REST endpoint and acts with your API key: its scopes, rate limit and mode apply. A test key (svc_test_…) works on separate test data and never emails or texts a client; simulate_client plays the client and advance_test_clock moves time (reminders, 72-hour auto-approval).',
  'Errors come back as tool errors whose text is the JSON error object {error, message, request_id}: invalid_request and unprocessable say which field to fix; forbidden means the key lacks a scope; not_found an unknown id; rate_limited how long to wait; unauthorized over stdio means no key yet: call login and show the user the URL and code it returns.',
].join('\n\n');
