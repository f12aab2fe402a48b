import { z } from 'zod';
import { PageLimit, Timestamp, optional } from '../../http/schemas.js';
import { SECRET_PATTERN } from './signing.js';
import { ENDPOINT_FORMATS } from './webhooks.format.js';
import { WEBHOOK_EVENT_NAMES } from './webhooks.events.js';
import { MAX_DELIVERY_ATTEMPTS } from './webhooks.schedule.js';

const EVENTS_DESCRIPTION = `Event names: ${WEBHOOK_EVENT_NAMES.join(', ')}. An unknown name is refused with 422.`;

/** Names are checked by the service (422 naming the unknown ones), so any string passes here. */
const EventNameInput = z.string().min(1).max(100);

const Secret = z
  .string()
  .regex(SECRET_PATTERN, 'secret must be whsec_ followed by 24 to 128 letters, digits or _ + / = -');

export const CreateWebhookBody = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/, error: 'url must be an http(s) URL' })
      .max(2048)
      .meta({ description: 'Receiving address. https only when the service runs in production.' }),
    events: z.array(EventNameInput).min(1).max(50).meta({ description: EVENTS_DESCRIPTION }),
    secret: optional(Secret).meta({
      description: 'Signing secret (whsec_…). Generated when omitted. Shown in this response only.',
    }),
    format: optional(z.enum(ENDPOINT_FORMATS)).meta({
      description:
        'raw (default): the event payload as JSON. slack: {text, blocks} for a Slack incoming webhook. discord: {content, embeds} for a Discord webhook. All are signed and retried alike.',
    }),
  })
  .meta({
    id: 'CreateWebhookEndpoint',
    examples: [{ url: 'https://hooks.example.com/intake', events: ['item.submitted', 'intake.completed'] }],
  });

export const UpdateWebhookBody = z
  .strictObject({
    url: CreateWebhookBody.shape.url.optional(),
    events: CreateWebhookBody.shape.events.optional(),
    format: CreateWebhookBody.shape.format,
  })
  .meta({
    id: 'UpdateWebhookEndpoint',
    description:
      'Changes only the fields given. The secret is never shown again (rotate_secret makes a new one). A new format applies to every later attempt, retries of earlier events included.',
    examples: [{ format: 'slack' }],
  });

export const WebhookEndpoint = z
  .object({
    id: z.string().regex(/^wh_/),
    url: z.string(),
    events: z.array(z.string()),
    format: z.enum(ENDPOINT_FORMATS),
    status: z.enum(['enabled', 'disabled']).meta({
      description:
        'disabled: the endpoint answered HTTP 410 and was deregistered; nothing more is sent to it.',
    }),
    disabled_reason: z.enum(['gone']).nullable(),
    disabled_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });

export const CreatedWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().meta({ description: 'The signing secret. Shown in this response only.' }),
}).meta({ id: 'CreatedWebhookEndpoint' });

export const RotateSecretBody = z
  .strictObject({
    secret: optional(Secret).meta({ description: 'The new secret; generated when omitted.' }),
  })
  .nullish();

export const RotatedWebhookSecret = CreatedWebhookEndpoint.extend({
  previous_secret_expires_at: Timestamp.meta({
    description: 'Until then every request carries two v1 signatures: the new secret and the previous one.',
  }),
}).meta({ id: 'RotatedWebhookSecret' });

export const WebhookList = z.object({ webhooks: z.array(WebhookEndpoint) }).meta({ id: 'WebhookList' });

export const WebhookParams = z.strictObject({ id: z.string().min(1) });

export const TestWebhookBody = z.strictObject({
  event: EventNameInput.meta({ description: EVENTS_DESCRIPTION, examples: ['item.submitted'] }),
});

export const DeliveryAttempt = z
  .object({
    id: z.string().regex(/^wha_/).meta({ description: 'This attempt (the paging cursor)' }),
    delivery_id: z.string().regex(/^whd_/),
    event_id: z.string(),
    event: z.string(),
    test: z.boolean().meta({ description: 'Sent by POST /v1/webhooks/:id/test (fictional payload)' }),
    attempt: z.number().int().min(1).max(MAX_DELIVERY_ATTEMPTS),
    requested_at: Timestamp,
    duration_ms: z.number().int(),
    response_status: z.number().int().nullable().meta({ description: 'null when no HTTP answer came' }),
    response_excerpt: z.string().nullable().meta({ description: 'The first 4 KiB of the response body' }),
    error: z
      .string()
      .nullable()
      .meta({ description: 'Why the attempt failed (timeout, refused address, HTTP status…)' }),
    outcome: z.enum(['succeeded', 'failed', 'gone']).meta({
      description: 'succeeded: a 2xx within the timeout. gone: HTTP 410, the endpoint was deregistered.',
    }),
    next_attempt_at: Timestamp.nullable().meta({
      description: 'When this failure is retried; null when not',
    }),
    delivery_status: z.enum(['pending', 'succeeded', 'failed', 'cancelled']).meta({
      description:
        'The delivery now: pending (a retry is scheduled), succeeded, failed (7 attempts failed, or 410), cancelled (the endpoint was deregistered).',
    }),
  })
  .meta({ id: 'WebhookDeliveryAttempt' });

export const DeliveriesQuery = z.strictObject({
  limit: PageLimit(100, 20),
  starting_after: optional(z.string().min(1)).meta({
    description: 'Cursor: the id of the last attempt of the previous page. Older attempts are returned.',
  }),
  delivery_id: optional(z.string().min(1)).meta({ description: 'Only the attempts of this delivery' }),
});

export const DeliveryPage = z.object({ deliveries: z.array(DeliveryAttempt), has_more: z.boolean() }).meta({
  id: 'WebhookDeliveryPage',
  description: 'Every attempt, newest first. Pass the last id as starting_after for the next page.',
});
