/** Short text summaries of REST answers: what an agent reads first, before the JSON. */

const LISTED = 5;

/** "a, b, c and 4 more" */
export function listed(values: readonly string[], max = LISTED): string {
  if (values.length <= max) return values.join(', ');
  return `${values.slice(0, max).join(', ')} and ${values.length - max} more`;
}

/** Item keys grouped by status: "submitted: logo, about; pending: docs". */
export function byStatus(items: readonly { key: string; status: string }[]): string {
  const groups = new Map<string, string[]>();
  for (const item of items) groups.set(item.status, [...(groups.get(item.status) ?? []), item.key]);
  return [...groups].map(([status, keys]) => `${status}: ${listed(keys)}`).join('; ');
}

export interface StatusLike {
  status: string;
  client_last_seen: string | null;
  progress: { submitted: number; total: number; outstanding: number; percent: number };
  items: readonly { key: string; status: string; assignee?: string }[];
  chases: readonly { channel: string; status: string; sent_at: string | null }[];
  recipients?: readonly {
    email: string;
    role: string;
    suppressed: boolean;
    opted_out_at: string | null;
    stalled_at: string | null;
  }[];
}

/** "An email", "An sms" (said "an ess-em-ess"), "A letter". */
function capitalArticle(word: string): string {
  return /^[aeiou]/i.test(word) || /^sms$/i.test(word) ? 'An' : 'A';
}

/** Who cannot be reached, and what to do about it: a bounce must not go unnoticed by an agent. */
function reachProblems(recipients: StatusLike['recipients']): string[] {
  const parts: string[] = [];
  for (const person of recipients ?? []) {
    if (person.suppressed) {
      parts.push(
        `${person.email} (${person.role}) is suppressed after a bounce or spam report: nothing is emailed to it${
          person.stalled_at ? ' and its reminders stopped' : ''
        }. Remedies: confirm the address with the user, then manage_recipients action reinstate if it was a wrong bounce, update_intake with a corrected client, or send_chase with channel sms if the client has a phone.`,
      );
    } else if (person.stalled_at) {
      parts.push(
        `${person.email}'s reminders stopped after three bounces in a row; manage_recipients action reinstate resumes them.`,
      );
    } else if (person.opted_out_at) {
      parts.push(
        `${person.email} opted out of reminders (${person.opted_out_at}); send_chase still reaches them.`,
      );
    }
  }
  return parts;
}

export function statusSummary(intakeId: unknown, s: StatusLike): string {
  const id = typeof intakeId === 'string' ? `Intake ${intakeId}` : 'The intake';
  const parts = [
    `${id} is ${s.status}: ${s.progress.submitted} of ${s.progress.total} items submitted (${s.progress.percent}%), ${s.progress.outstanding} outstanding.`,
  ];
  const clientItems = s.items.filter((item) => item.assignee !== 'owner');
  const decisions = s.items.filter((item) => item.assignee === 'owner');
  if (clientItems.length > 0) parts.push(`Items: ${byStatus(clientItems)}.`);
  const open = decisions.filter((item) => item.status === 'pending').map((item) => item.key);
  if (open.length > 0) {
    parts.push(
      `Open decisions for the account's people (not counted above; a person decides them in the dashboard): ${listed(open)}.`,
    );
  }
  parts.push(
    s.client_last_seen
      ? `Client last seen ${s.client_last_seen}.`
      : 'The client has not opened the portal yet.',
  );
  const bounced = s.chases.filter((chase) => chase.status === 'bounced').length;
  if (bounced > 0) parts.push(`${bounced} reminder${bounced === 1 ? '' : 's'} bounced.`);
  parts.push(...reachProblems(s.recipients));
  const next = s.chases.find((chase) => chase.status === 'scheduled');
  if (next) parts.push(`${capitalArticle(next.channel)} ${next.channel} reminder is scheduled.`);
  return parts.join(' ');
}

export interface ResultsLike {
  intake_id: string;
  status: string;
  items: readonly {
    key: string;
    type: string;
    status: string;
    value: unknown;
    withheld?: string | undefined;
    decided_by?: string | null | undefined;
    proposed?: { value: unknown } | null | undefined;
    comments?: readonly { author: string }[] | undefined;
  }[];
}

function hasFiles(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'files' in value && Array.isArray(value.files)
    ? value.files.length > 0
    : false;
}

/**
 * What a results call did: which items came, which secrets were revealed now (store them: they are
 * not shown again) or withheld and why, and when file links expire (only when there are files).
 */
export function resultsSummary(r: ResultsLike): string {
  if (r.items.length === 0) {
    return `No items to return for ${r.intake_id} (${r.status}): nothing approved (since the previous call, with only_new); include_pending also shows submitted items.`;
  }
  const parts = [
    `${r.items.length} item${r.items.length === 1 ? '' : 's'} of ${r.intake_id} (${r.status}): ${byStatus(r.items)}.`,
  ];
  const secrets = r.items.filter((item) => item.type === 'secret');
  const revealed = secrets.filter((item) => item.value !== null).map((item) => item.key);
  if (revealed.length > 0) {
    parts.push(
      `Secret ${listed(revealed)} revealed now: store it now in the user's secret store; it will not be shown again (unless the client resubmits), and do not repeat it in chat.`,
    );
  }
  const lacking = secrets.filter((item) => item.withheld === 'secrets:read').map((item) => item.key);
  if (lacking.length > 0) {
    parts.push(
      `Secret ${listed(lacking)} withheld: this key lacks the secrets:read scope; the user can reveal it in the dashboard or give the agent a key with that scope.`,
    );
  }
  const shown = secrets.filter((item) => item.withheld === 'revealed').map((item) => item.key);
  if (shown.length > 0) {
    parts.push(
      `Secret ${listed(shown)} withheld: it was revealed once already (revealed_at); request_revision asks the client for it again.`,
    );
  }
  for (const item of r.items.filter((entry) => entry.proposed !== undefined)) {
    parts.push(
      item.proposed
        ? `Decision ${item.key} is open, with the proposal ${JSON.stringify(item.proposed.value)}: a person accepts or overrides it in the dashboard (completion adopts it).`
        : `Decision ${item.key} is open, without a proposal: a person decides it in the dashboard.`,
    );
  }
  const awaitingReply = r.items
    .filter((item) => item.comments?.at(-1)?.author === 'client')
    .map((item) => item.key);
  if (awaitingReply.length > 0) {
    parts.push(
      `The client's comment on ${listed(awaitingReply)} has no answer yet: read it in comments, reply with comment_on_item.`,
    );
  }
  if (r.items.some((item) => hasFiles(item.value))) {
    parts.push('File URLs expire 24 hours from now: download the files promptly.');
  }
  return parts.join(' ');
}

export function whereEmailsGo(livemode: boolean): string {
  return livemode
    ? 'An email is on its way to the client.'
    : 'Test mode: no email reaches the client (it is in the test outbox).';
}
