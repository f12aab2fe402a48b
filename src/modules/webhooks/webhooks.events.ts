import { newId, randomBase62 } from '../../lib/ids.js';

/**
 * The event catalogue: every name an endpoint may subscribe to (CONTRACT "Events": the union of
 * SPEC's two lists, plus intake.overdue, chase.opted_out and comment.created), when it fires, and the fields its
 * payload carries beyond the common ones. The examples feed POST /v1/webhooks/:id/test and the docs.
 */

export interface EventSpec {
  fires: string;
  /** The payload's own fields, with a fictional but realistic value each. */
  example(now: string): Record<string, unknown>;
}

const PROJECT = 'Website refresh';
const CLIENT_EMAIL = 'dana@example.com';
const ago = (now: string, minutes: number) => new Date(Date.parse(now) - minutes * 60_000).toISOString();

export const EVENT_CATALOGUE = {
  'intake.sent': {
    fires: 'The portal link was sent to the client (creation with send, or POST /v1/intakes/:id/send).',
    example: (now) => ({ project_name: PROJECT, client_email: CLIENT_EMAIL, sent_at: now }),
  },
  'intake.viewed': {
    fires: 'The client opened the portal for the first time.',
    example: (now) => ({ client_email: CLIENT_EMAIL, viewed_at: now }),
  },
  'client.viewed': {
    fires: 'The client opened the portal (at most once per 30 minutes).',
    example: (now) => ({
      client_email: CLIENT_EMAIL,
      viewed_at: now,
      ip: '3f1c9a5e0b7d42c8a6e1f0d9b8c7a6e5d4c3b2a1908f7e6d5c4b3a2918f7e6d5',
    }),
  },
  'item.submitted': {
    fires: 'The client submitted an item (uploaded or filled in).',
    example: (now) => ({ item_key: 'logo', item_type: 'image', status: 'submitted', submitted_at: now }),
  },
  'item.approved': {
    fires: 'An item was approved, explicitly or by the 72-hour auto-approval.',
    example: (now) => ({
      item_key: 'logo',
      item_type: 'image',
      status: 'approved',
      approved_at: now,
      auto_approved: false,
    }),
  },
  'item.revision_requested': {
    fires: 'A revision of an item was requested (POST /v1/intakes/:id/revision).',
    example: (now) => ({
      item_key: 'logo',
      item_type: 'image',
      status: 'needs_revision',
      note: 'Please send the logo on a transparent background.',
      requested_at: now,
    }),
  },
  'intake.completed': {
    fires: 'Every required item is submitted (or approved); optional items do not block.',
    example: (now) => ({
      project_name: PROJECT,
      client_email: CLIENT_EMAIL,
      completed_at: now,
      items_count: 3,
    }),
  },
  'intake.complete': {
    fires: 'Every required item is approved.',
    example: (now) => ({
      project_name: PROJECT,
      client_email: CLIENT_EMAIL,
      completed_at: now,
      items_count: 3,
    }),
  },
  'chase.sent': {
    fires: 'A reminder (chase) email or SMS was dispatched, scheduled or manual.',
    example: (now) => ({
      chase_id: newId('ch'),
      channel: 'email',
      attempt_no: 2,
      trigger: 'schedule',
      recipient: CLIENT_EMAIL,
      sent_at: now,
    }),
  },
  'chase.bounced': {
    fires: 'A reminder email hard-bounced or was reported as spam; the address is suppressed.',
    example: (now) => ({
      chase_id: newId('ch'),
      channel: 'email',
      client_email: CLIENT_EMAIL,
      bounced_at: now,
      reason: 'hard_bounce',
    }),
  },
  'intake.stalled': {
    fires: 'Three consecutive reminder emails of the intake bounced.',
    example: (now) => ({
      project_name: PROJECT,
      client_email: CLIENT_EMAIL,
      stalled_at: now,
      missing_items: ['logo', 'brand_guide'],
    }),
  },
  'intake.overdue': {
    fires:
      "The due date passed (end of that day in the client's time zone, UTC when unknown) with required items still missing; once per due date.",
    example: (now) => ({
      project_name: PROJECT,
      client_email: CLIENT_EMAIL,
      due_date: ago(now, 24 * 60).slice(0, 10),
      overdue_at: now,
      missing_items: ['brand_guide'],
    }),
  },
  'chase.opted_out': {
    fires:
      "Someone used their reminder's opt-out link (the client, or an also_notify recipient: client_email is theirs); no further reminders go to them.",
    example: (now) => ({ client_email: CLIENT_EMAIL, channel: 'email', opted_out_at: now }),
  },
  'comment.created': {
    fires:
      "The client commented on an item in the portal (the conversation on an item; the owner's own comments do not fire it).",
    example: (now) => ({
      comment_id: newId('cmt'),
      item_key: 'logo',
      author: 'client',
      body: 'This is the largest version we have. Would an SVG help?',
      created_at: now,
    }),
  },
} as const satisfies Record<string, EventSpec>;

export type WebhookEventName = keyof typeof EVENT_CATALOGUE;

export const WEBHOOK_EVENT_NAMES = Object.keys(EVENT_CATALOGUE) as [WebhookEventName, ...WebhookEventName[]];

export function isWebhookEventName(name: string): name is WebhookEventName {
  return Object.hasOwn(EVENT_CATALOGUE, name);
}

/**
 * A realistic, fictional payload of an event (POST /v1/webhooks/:id/test): an evt_ id and an in_ id
 * that belong to nothing, the world's time, and the event's own fields.
 */
export function examplePayload(
  event: WebhookEventName,
  context: { now: string; livemode: boolean },
): Record<string, unknown> {
  return {
    id: newId('evt'),
    event,
    intake_id: `in_${randomBase62(22)}`,
    occurred_at: context.now,
    livemode: context.livemode,
    ...EVENT_CATALOGUE[event].example(context.now),
  };
}
