/**
 * What a delivery's body looks like for each endpoint format (CONTRACT: raw | slack | discord).
 * raw is the event payload itself; slack gets `{text, blocks}` (an incoming-webhook message with
 * Block Kit sections) and discord `{content, embeds}` (an execute-webhook message with one embed).
 * All three are signed the same way; chat services ignore the signature headers.
 */

export const ENDPOINT_FORMATS = ['raw', 'slack', 'discord'] as const;
export type EndpointFormat = (typeof ENDPOINT_FORMATS)[number];

/** Discord refuses content over 2,000 characters; Slack truncates long texts. */
const MAX_MESSAGE_CHARS = 1_900;
const MAX_NOTE_CHARS = 200;
/** Discord: a field value holds at most 1,024 characters; Slack: a section field at most 2,000. */
const MAX_FIELD_CHARS = 1_000;

/** Payload fields worth showing in a chat message, with their labels, in this order. */
const DETAIL_FIELDS: readonly (readonly [string, string])[] = [
  ['project_name', 'Project'],
  ['client_email', 'Client'],
  ['item_key', 'Item'],
  ['channel', 'Channel'],
  ['recipient', 'Recipient'],
  ['reason', 'Reason'],
  ['due_date', 'Due date'],
  ['missing_items', 'Missing items'],
  ['note', 'Note'],
  ['intake_id', 'Intake'],
];

/** Embed colours by outcome: green good news, amber attention, red trouble, blue the rest. */
const COLOURS = { good: 0x1f9d55, attention: 0xd97706, trouble: 0xdc2626, info: 0x2454d6 } as const;
const EVENT_COLOUR: Record<string, keyof typeof COLOURS> = {
  'intake.completed': 'good',
  'intake.complete': 'good',
  'item.approved': 'good',
  'item.submitted': 'info',
  'item.revision_requested': 'attention',
  'intake.overdue': 'attention',
  'chase.opted_out': 'attention',
  'comment.created': 'info',
  'chase.bounced': 'trouble',
  'intake.stalled': 'trouble',
};

export function renderBody(format: EndpointFormat, payload: Record<string, unknown>): string {
  if (format === 'raw') return JSON.stringify(payload);
  return JSON.stringify(format === 'slack' ? slackMessage(payload) : discordMessage(payload));
}

function field(payload: Record<string, unknown>, name: string): string {
  const value = payload[name];
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
  return '';
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The label/value pairs of a payload that a chat message shows (empty ones left out). */
export function details(payload: Record<string, unknown>): { label: string; value: string }[] {
  return DETAIL_FIELDS.map(([name, label]) => ({ label, value: clip(field(payload, name), MAX_FIELD_CHARS) }))
    .filter((d) => d.value !== '')
    .filter((d) => !(d.label === 'Recipient' && d.value === field(payload, 'client_email')));
}

/** Slack mrkdwn: &, < and > are control characters (links, mentions such as <!channel>). */
function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function footer(payload: Record<string, unknown>): string {
  const mode = payload.livemode === false ? 'test mode' : 'live';
  return [field(payload, 'event'), field(payload, 'occurred_at'), mode].filter(Boolean).join(' · ');
}

/** Slack incoming webhook: `text` is the notification fallback, `blocks` the message. */
export function slackMessage(payload: Record<string, unknown>) {
  const text = summarize(payload);
  const facts = details(payload);
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: slackEscape(text) } },
      ...(facts.length > 0
        ? [
            {
              type: 'section',
              // Slack allows at most 10 fields in a section.
              fields: facts.slice(0, 10).map((d) => ({
                type: 'mrkdwn',
                text: `*${d.label}*\n${slackEscape(d.value)}`,
              })),
            },
          ]
        : []),
      { type: 'context', elements: [{ type: 'mrkdwn', text: slackEscape(footer(payload)) }] },
    ],
  };
}

/** Discord execute-webhook: `content` plus one embed; mentions are never parsed (client text inside). */
export function discordMessage(payload: Record<string, unknown>) {
  const content = summarize(payload);
  const occurred = field(payload, 'occurred_at');
  return {
    content,
    embeds: [
      {
        title: clip(field(payload, 'event') || 'event', 256),
        description: content,
        color: COLOURS[EVENT_COLOUR[field(payload, 'event')] ?? 'info'],
        fields: details(payload).map((d) => ({ name: d.label, value: d.value, inline: d.value.length < 40 })),
        ...(occurred ? { timestamp: occurred } : {}),
        footer: { text: payload.livemode === false ? 'test mode' : 'live' },
      },
    ],
    allowed_mentions: { parse: [] as string[] },
  };
}

/** A short human sentence for an event, e.g. `Item "logo" submitted (intake in_…)`. */
export function summarize(payload: Record<string, unknown>): string {
  const f = (name: string) => field(payload, name);
  const project = f('project_name') ? `"${f('project_name')}"` : '';
  const missing = f('missing_items') ? ` (missing: ${f('missing_items')})` : '';
  const lines: Record<string, () => string> = {
    'intake.sent': () => `Intake ${project} sent to ${f('client_email')}`,
    'intake.viewed': () => `${f('client_email')} opened the portal for the first time`,
    'client.viewed': () => `${f('client_email')} opened the portal`,
    'item.submitted': () => `Item "${f('item_key')}" submitted`,
    'item.approved': () =>
      `Item "${f('item_key')}" approved${payload.auto_approved === true ? ' automatically' : ''}`,
    'item.revision_requested': () =>
      `Revision requested for item "${f('item_key')}"${f('note') ? `: ${clip(f('note'), MAX_NOTE_CHARS)}` : ''}`,
    'intake.completed': () => `Intake ${project}: every required item is submitted`,
    'intake.complete': () => `Intake ${project}: every required item is approved`,
    'chase.sent': () => `Reminder (${f('channel')}) sent to ${f('recipient') || f('client_email')}`,
    'chase.bounced': () => `Reminder (${f('channel')}) to ${f('client_email')} bounced (${f('reason')})`,
    'intake.stalled': () => `Intake ${project} stalled: three reminders bounced${missing}`,
    'intake.overdue': () => `Intake ${project} is overdue${missing}`,
    'chase.opted_out': () => `${f('client_email')} opted out of reminders`,
    'comment.created': () => `Comment on item "${f('item_key')}": ${clip(f('body'), MAX_NOTE_CHARS)}`,
  };
  const event = f('event');
  const line = Object.hasOwn(lines, event) ? (lines[event]?.() ?? event) : event;
  const prefix = payload.livemode === false ? '[test] ' : '';
  const intake = f('intake_id') ? ` (intake ${f('intake_id')})` : '';
  return clip(`${prefix}${line}${intake}`, MAX_MESSAGE_CHARS);
}
