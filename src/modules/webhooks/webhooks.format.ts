/**
 * What a delivery's body looks like for each endpoint format (CONTRACT: raw | slack | discord).
 * raw is the event payload itself; slack and discord get a one-line message in the shape their
 * incoming webhooks expect. All three are signed the same way.
 */

export const ENDPOINT_FORMATS = ['raw', 'slack', 'discord'] as const;
export type EndpointFormat = (typeof ENDPOINT_FORMATS)[number];

/** Discord refuses content over 2,000 characters; Slack truncates long texts. */
const MAX_MESSAGE_CHARS = 1_900;
const MAX_NOTE_CHARS = 200;

export function renderBody(format: EndpointFormat, payload: Record<string, unknown>): string {
  if (format === 'raw') return JSON.stringify(payload);
  const text = summarize(payload);
  return JSON.stringify(format === 'slack' ? { text } : { content: text });
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
  };
  const event = f('event');
  const line = Object.hasOwn(lines, event) ? (lines[event]?.() ?? event) : event;
  const prefix = payload.livemode === false ? '[test] ' : '';
  const intake = f('intake_id') ? ` (intake ${f('intake_id')})` : '';
  return clip(`${prefix}${line}${intake}`, MAX_MESSAGE_CHARS);
}
