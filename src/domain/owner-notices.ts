import { localParts, zonedTimeToUtc } from './chases.js';

/**
 * Owner notifications: which public events the account's people are told about, who is told when,
 * how one sending's events become one email, and when the daily digest goes out. No I/O.
 */

export const NOTICE_FREQUENCIES = ['each', 'daily', 'off'] as const;
/** each: an email per sending (batched per intake); daily: one digest a day; off: nothing. */
export type NoticeFrequency = (typeof NOTICE_FREQUENCIES)[number];

export function isNoticeFrequency(value: string): value is NoticeFrequency {
  return (NOTICE_FREQUENCIES as readonly string[]).includes(value);
}

/**
 * The public events an owner hears about. intake.completed: every required answer is in (ready for
 * review); intake.complete: every required answer is approved.
 */
export const NOTICE_EVENT_TYPES = [
  'item.submitted',
  'intake.completed',
  'intake.complete',
  'chase.bounced',
  'intake.stalled',
  'intake.overdue',
  'chase.opted_out',
  'comment.created',
  // Not a public event: an email other than a reminder (the portal link…) bounced (clientEmailBounced).
  'message.bounced',
] as const;
export type NoticeEventType = (typeof NOTICE_EVENT_TYPES)[number];

/** What a notice keeps of its event: only what the email says (keys, not labels: read when sent). */
export interface NoticeData {
  item_key?: string;
  /** comment.created: what the client wrote (the email quotes it, escaped). */
  body?: string;
  address?: string;
  due_date?: string;
  missing_items?: string[];
}

export interface Notice {
  type: NoticeEventType;
  data: NoticeData;
  occurredAt: string;
}

/** Debounce of a sending: the first notice of an intake waits this long for the rest of its burst. */
export const BATCH_DELAY_MS = 60_000;
/** The local hour at which a person's daily digest goes out (the day before it, up to this hour). */
export const DIGEST_HOUR = 8;

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Whether a recorded public event is worth telling the owner, and what of it to keep. Null: not a
 * notice (intake.sent, chase.sent… are the owner's own doing or routine).
 */
export function noticeOfEvent(
  type: string,
  payload: Record<string, unknown>,
): Omit<Notice, 'occurredAt'> | null {
  switch (type) {
    case 'item.submitted': {
      const key = stringOf(payload.item_key);
      return key ? { type, data: { item_key: key } } : null;
    }
    case 'intake.completed':
    case 'intake.complete':
      return { type, data: {} };
    case 'comment.created': {
      const key = stringOf(payload.item_key);
      const body = stringOf(payload.body);
      return key && body ? { type, data: { item_key: key, body } } : null;
    }
    case 'chase.bounced':
    case 'chase.opted_out': {
      const address = stringOf(payload.client_email);
      return { type, data: address ? { address } : {} };
    }
    case 'intake.stalled':
    case 'intake.overdue': {
      const missing = Array.isArray(payload.missing_items)
        ? payload.missing_items.filter((k): k is string => typeof k === 'string')
        : [];
      const due = stringOf(payload.due_date);
      return { type, data: { missing_items: missing, ...(due ? { due_date: due } : {}) } };
    }
    default:
      return null;
  }
}

/** A person of the account: the account holder (owner) or someone else who signs in (member). */
export interface Person {
  email: string;
  role: string;
}

/** The account holder hears everything unless they choose otherwise; other people opt in. */
export function defaultFrequency(role: string): NoticeFrequency {
  return role === 'owner' ? 'each' : 'off';
}

/** The people who get notices at this frequency: their own choice, else their role's default. */
export function peopleAt<P extends Person>(
  people: readonly P[],
  chosen: ReadonlyMap<string, NoticeFrequency>,
  frequency: NoticeFrequency,
): P[] {
  const seen = new Set<string>();
  return people.filter((person) => {
    const email = person.email.toLowerCase();
    if (seen.has(email)) return false;
    seen.add(email);
    return (chosen.get(email) ?? defaultFrequency(person.role)) === frequency;
  });
}

/** One intake's notices, gathered into what one email says. */
export interface NoticeSummary {
  /** Items submitted, each once, in the order they arrived. */
  submittedKeys: string[];
  readyForReview: boolean;
  complete: boolean;
  /** Addresses whose email bounced, each once. */
  bounced: string[];
  stalled: boolean;
  /** The due date that passed, with the required items then missing. */
  overdue: { dueDate: string | null; missingKeys: string[] } | null;
  optedOut: string[];
  /** The client's comments, in the order they came. */
  comments: { itemKey: string; body: string }[];
}

function pushOnce(list: string[], value: string | undefined): void {
  if (value !== undefined && !list.includes(value)) list.push(value);
}

export function summarize(notices: readonly Notice[]): NoticeSummary {
  const ordered = [...notices].sort((a, b) => a.occurredAt.localeCompare(b.occurredAt));
  const summary: NoticeSummary = {
    submittedKeys: [],
    readyForReview: false,
    complete: false,
    bounced: [],
    stalled: false,
    overdue: null,
    optedOut: [],
    comments: [],
  };
  for (const notice of ordered) {
    switch (notice.type) {
      case 'item.submitted':
        pushOnce(summary.submittedKeys, notice.data.item_key);
        break;
      case 'intake.completed':
        summary.readyForReview = true;
        break;
      case 'intake.complete':
        summary.complete = true;
        break;
      case 'chase.bounced':
      case 'message.bounced':
        pushOnce(summary.bounced, notice.data.address ?? '');
        break;
      case 'intake.stalled':
        summary.stalled = true;
        break;
      case 'intake.overdue':
        summary.overdue = {
          dueDate: notice.data.due_date ?? null,
          missingKeys: notice.data.missing_items ?? [],
        };
        break;
      case 'chase.opted_out':
        pushOnce(summary.optedOut, notice.data.address ?? '');
        break;
      case 'comment.created':
        summary.comments.push({ itemKey: notice.data.item_key ?? '', body: notice.data.body ?? '' });
        break;
    }
  }
  // Complete (all approved) says more than ready for review (all in).
  if (summary.complete) summary.readyForReview = false;
  return summary;
}

/** What the subject line leads with: the most pressing thing the summary says. */
export type Headline =
  'stalled' | 'bounced' | 'overdue' | 'complete' | 'ready' | 'answers' | 'comments' | 'opted_out';

export function headlineOf(summary: NoticeSummary): Headline | null {
  if (summary.stalled) return 'stalled';
  if (summary.bounced.length > 0) return 'bounced';
  if (summary.overdue) return 'overdue';
  if (summary.complete) return 'complete';
  if (summary.readyForReview) return 'ready';
  if (summary.submittedKeys.length > 0) return 'answers';
  if (summary.comments.length > 0) return 'comments';
  if (summary.optedOut.length > 0) return 'opted_out';
  return null;
}

/**
 * The next digest instant strictly after `afterMs`: DIGEST_HOUR:00 local time in the person's time
 * zone (UTC when unknown), on the same local day or the next.
 */
export function nextDigestAt(afterMs: number, timeZone: string | null): number {
  const zone = timeZone ?? 'UTC';
  const today = localParts(afterMs, zone);
  for (let days = 0; days <= 2; days++) {
    const day = new Date(Date.UTC(today.year, today.month - 1, today.day + days));
    const at = zonedTimeToUtc(
      {
        year: day.getUTCFullYear(),
        month: day.getUTCMonth() + 1,
        day: day.getUTCDate(),
        hour: DIGEST_HOUR,
        minute: 0,
      },
      zone,
    );
    if (at > afterMs) return at;
  }
  throw new Error('unreachable: a digest hour falls within two days');
}

/**
 * The window a digest sent at `atMs` covers: from the digest instant the local day before (23 or 25
 * hours across a daylight-saving change) up to `atMs`, the start excluded and the end included.
 */
export function digestWindow(atMs: number, timeZone: string | null): { fromMs: number; toMs: number } {
  const zone = timeZone ?? 'UTC';
  const p = localParts(atMs, zone);
  const before = new Date(Date.UTC(p.year, p.month - 1, p.day - 1));
  const fromMs = zonedTimeToUtc(
    {
      year: before.getUTCFullYear(),
      month: before.getUTCMonth() + 1,
      day: before.getUTCDate(),
      hour: p.hour,
      minute: p.minute,
    },
    zone,
  );
  return { fromMs, toMs: atMs };
}
