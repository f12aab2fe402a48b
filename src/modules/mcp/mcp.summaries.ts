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
  items: readonly { key: string; status: string }[];
  chases: readonly { channel: string; status: string; sent_at: string | null }[];
}

export function statusSummary(intakeId: unknown, s: StatusLike): string {
  const id = typeof intakeId === 'string' ? `Intake ${intakeId}` : 'The intake';
  const parts = [
    `${id} is ${s.status}: ${s.progress.submitted} of ${s.progress.total} items submitted (${s.progress.percent}%), ${s.progress.outstanding} outstanding.`,
  ];
  if (s.items.length > 0) parts.push(`Items: ${byStatus(s.items)}.`);
  parts.push(
    s.client_last_seen
      ? `Client last seen ${s.client_last_seen}.`
      : 'The client has not opened the portal yet.',
  );
  const next = s.chases.find((chase) => chase.status === 'scheduled');
  if (next) parts.push(`A ${next.channel} reminder is scheduled.`);
  return parts.join(' ');
}

export function whereEmailsGo(livemode: boolean): string {
  return livemode
    ? 'An email is on its way to the client.'
    : 'Test mode: no email reaches the client (it is in the test outbox).';
}
