import { afterQuietHours } from './chases.js';

/**
 * When the client hears of the owner's comments: one email per intake for the comments of a short
 * window (the first comment plans it, the rest join it), and never in the client's quiet hours when
 * the intake respects them, as reminders do. No I/O.
 */
export const COMMENT_EMAIL_DELAY_MS = 5 * 60_000;

export interface CommentEmailSettings {
  respectQuietHours: boolean;
  /** The client's IANA time zone; unknown means no quiet-hours shift. */
  timeZone: string | null;
}

/** When the batch that a comment made at `nowMs` starts goes out. */
export function commentEmailDueAt(nowMs: number, settings: CommentEmailSettings): number {
  return sendableAt(nowMs + COMMENT_EMAIL_DELAY_MS, settings);
}

/** `ms`, or the end of the client's quiet hours when `ms` falls inside them and they are respected. */
export function sendableAt(ms: number, settings: CommentEmailSettings): number {
  return settings.respectQuietHours ? afterQuietHours(ms, settings.timeZone) : ms;
}
