import { z } from 'zod';
import { WEBHOOK_TOOL } from '../../domain/follow-up.js';
import {
  CreateWebhookBody,
  CreatedWebhookEndpoint,
  DeliveryAttempt,
  TestWebhookBody,
  WebhookList,
  WebhookParams,
} from '../webhooks/webhooks.schemas.js';
import { DESTRUCTIVE } from './mcp.annotations.js';
import { defineTool, type ToolSpec } from './mcp.executor.js';
import { listed } from './mcp.summaries.js';

/*
 * Webhooks for agents: the polling descriptions say a webhook is better, so an agent must be able to
 * register one. One tool over the endpoints of /v1/webhooks (like manage_recipients): the action picks
 * the endpoint, and each call is still one REST request with the caller's key (admin scope).
 */

const webhookId = WebhookParams.shape.id.describe(
  'delete and test: the endpoint id (wh_…), from action list or create.',
);

function summaryOf(action: unknown, body: unknown, args: Readonly<Record<string, unknown>>): string {
  if (action === 'delete')
    return `Webhook endpoint ${String(args.webhook_id)} deleted: nothing more is sent to it.`;
  if (action === 'list') {
    const list = WebhookList.safeParse(body);
    if (!list.success) return 'Webhook endpoints listed.';
    return list.data.webhooks.length === 0
      ? 'No webhook endpoints are registered: create one (action create) instead of polling.'
      : `${list.data.webhooks.length} webhook endpoint${list.data.webhooks.length === 1 ? '' : 's'}: ${listed(
          list.data.webhooks.map((w) => `${w.id} ${w.url} (${w.status}; ${listed(w.events, 3)})`),
        )}.`;
  }
  if (action === 'test') {
    const attempt = DeliveryAttempt.safeParse(body);
    if (!attempt.success) return 'Test event sent.';
    return attempt.data.outcome === 'succeeded'
      ? `Test ${attempt.data.event} delivered: the receiver answered ${attempt.data.response_status ?? ''}.`
      : `Test ${attempt.data.event} failed: ${attempt.data.error ?? attempt.data.outcome}. Check that the URL is reachable and answers 2xx.`;
  }
  const created = CreatedWebhookEndpoint.safeParse(body);
  if (!created.success) return 'Webhook endpoint created.';
  return `Webhook endpoint ${created.data.id} created for ${listed(created.data.events)} (${created.data.format}). Store its signing secret now (in secret, shown only in this answer) to verify the Service-Signature header of each request; then action test sends a sample event.`;
}

export const WEBHOOK_TOOLS: readonly ToolSpec[] = [
  defineTool({
    name: WEBHOOK_TOOL,
    title: 'Register, list, test or delete webhooks',
    description: [
      "Webhooks instead of polling: a registered endpoint is called (a signed POST) the moment something happens, e.g. item.submitted when the client submits and intake.completed at the end. Needs a key with the admin scope (a forbidden error says so otherwise); the endpoint receives the account's events for every intake of the key's mode (live or test).",
      'action create: POST /v1/webhooks {url, events, format}: format raw (default, the JSON payload), slack or discord (a chat webhook URL shows readable messages). The answer shows the signing secret once: store it to verify the Service-Signature header. action list: GET /v1/webhooks. action delete: DELETE /v1/webhooks/:id. action test {webhook_id, event}: sends a sample event now and answers with the attempt (status, error).',
      'define_intake answers follow_up.webhook.events: the events to register for.',
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/webhooks',
    choose: {
      argument: 'action',
      routes: {
        create: { method: 'POST', path: '/v1/webhooks' },
        list: { method: 'GET', path: '/v1/webhooks' },
        delete: { method: 'DELETE', path: '/v1/webhooks/:webhook_id' },
        test: { method: 'POST', path: '/v1/webhooks/:webhook_id/test' },
      },
    },
    input: z.strictObject({
      action: z.enum(['create', 'list', 'delete', 'test']).describe('What to do'),
      webhook_id: webhookId.optional(),
      url: CreateWebhookBody.shape.url.optional(),
      events: CreateWebhookBody.shape.events.optional(),
      format: CreateWebhookBody.shape.format,
      event: TestWebhookBody.shape.event.optional().describe('test only: the event to send a sample of'),
    }),
    // delete drops an endpoint; create and test call an outside address.
    annotations: { ...DESTRUCTIVE, openWorldHint: true },
    summarize: (r, { args }) => summaryOf(args.action, r, args),
  }),
];
