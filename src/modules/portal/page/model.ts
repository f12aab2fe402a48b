import type { TFunction } from 'i18next';
import { unsentAnswer } from '../../../domain/intake-state.js';
import { isEmptyValue } from '../../../domain/values.js';
import type { z } from 'zod';
import type { PortalItem, PortalView } from '../portal.schemas.js';
import type { FormFields } from './schema-form.js';

export type ViewItem = z.infer<typeof PortalItem>;
export type View = z.infer<typeof PortalView>;

export interface Branding {
  accountName: string;
  /** A data: URL or a path on this origin (the portal makes no third-party requests). */
  logoUrl: string | null;
  /** #rrggbb */
  accentColor: string | null;
}

/** What went wrong with one item's last form post, to show next to it. */
export interface CardError {
  message: string;
  /** Field path (structured items) → message. */
  fields: Map<string, string>;
  /** What the client had typed, shown again instead of the saved value. */
  draft: FormFields;
}

/** Everything one rendering of the page (or one card of it) needs. */
export interface PageModel {
  view: View;
  t: TFunction;
  /** The page's language (supported, e.g. "de"). */
  language: string;
  branding: Branding;
  /** The plan's per-file limit, in bytes. */
  planMaxFileBytes: number;
  timeZone: string | null;
  /** The country of phone numbers typed without "+", when known. */
  country: string | undefined;
  /** Archived: shown read-only with a message. */
  closed: boolean;
  errors: Map<string, CardError>;
  /** Item keys whose last action succeeded, to confirm it ("Saved", "Submitted"). */
  notice: { key: string; kind: 'saved' | 'submitted' | 'uploaded' | 'removed' } | null;
  /** Keys of the items other items' show_if depends on: changing them redraws the page. */
  controllers: ReadonlySet<string>;
  /** The outcome of the page's one send, to confirm it (counts of items sent and refused). */
  sent: { submitted: number; invalid: number } | null;
}

/** Whether the client saved something in this item that has not been sent (the page's one send sends it). */
export function isUnsent(item: ViewItem): boolean {
  return unsentAnswer({
    status: item.status,
    hasContent: item.files.length > 0 || item.secret_saved || !isEmptyValue(item.value),
    saved_at: item.saved_at,
    submitted_at: item.submitted_at,
  });
}

export function portalPath(intakeId: string, ...rest: string[]): string {
  return ['/portal', encodeURIComponent(intakeId), ...rest.map(encodeURIComponent)].join('/');
}

export function apiPath(intakeId: string, ...rest: string[]): string {
  return ['/portal/api', encodeURIComponent(intakeId), ...rest.map(encodeURIComponent)].join('/');
}
