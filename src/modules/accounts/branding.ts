import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import { cachedReader } from '../../db/read-cache.js';
import type { Database } from '../../db/schema.js';
import { planOf } from '../../domain/plans.js';
import type { Branding } from '../portal/page/model.js';

/**
 * An account's branding, shown in its portal and its emails: the account's name always, and on plans with
 * custom_branding an optional logo and accent colour. The logo is a data: URL (at most 200 KB) so the
 * portal never asks another host for anything.
 */
const LOGO_DATA_URL = /^data:image\/(png|jpeg|webp|gif|svg\+xml);base64,[A-Za-z0-9+/]+={0,2}$/;
export const MAX_LOGO_URL_CHARS = 200_000;

export const BrandingSettings = z
  .strictObject({
    logo_url: z
      .string()
      .max(MAX_LOGO_URL_CHARS)
      .regex(LOGO_DATA_URL, 'logo_url must be a base64 data: URL of a PNG, JPEG, WebP, GIF or SVG image')
      .nullish()
      .meta({
        description:
          'The logo shown in the client portal, as data:image/…;base64,… (at most 200,000 characters); null removes it',
      }),
    accent_color: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/, 'accent_color must be a colour #rrggbb')
      .nullish()
      .meta({
        description: 'Accent colour of buttons and links in the portal, #rrggbb; null restores the default',
      }),
  })
  .meta({ id: 'BrandingSettings' });

export type BrandingPatch = z.output<typeof BrandingSettings>;

// Read on every GET /v1/account and portal page: compiled once.
const selectBranding = preparedQuery(
  (db: Kysely<Database>, accountId: string) =>
    db
      .selectFrom('account_branding')
      .select(['logo_url', 'accent_color'])
      .where('account_id', '=', accountId),
  [''],
);

export async function brandingSettingsOf(
  db: Kysely<Database>,
  accountId: string,
): Promise<{ logo_url: string | null; accent_color: string | null }> {
  const [row] = await selectBranding(db, accountId);
  return { logo_url: row?.logo_url ?? null, accent_color: row?.accent_color ?? null };
}

/**
 * brandingSettingsOf, kept in memory between commits where the database allows (see cachedReader), and
 * past commits that change nothing of the account's.
 */
const readBrandingBetweenCommits = cachedReader((db, accountId) => brandingSettingsOf(db.kysely, accountId), {
  ofKey: (accountId) => accountId,
});

export async function cachedBrandingSettingsOf(
  db: Db,
  accountId: string,
): Promise<{ logo_url: string | null; accent_color: string | null }> {
  return (await readBrandingBetweenCommits(db, accountId)) ?? { logo_url: null, accent_color: null };
}

/** Applies the given fields (undefined: unchanged; null: cleared). */
export async function updateBranding(
  db: Kysely<Database>,
  accountId: string,
  patch: BrandingPatch,
  at: string,
) {
  const current = await brandingSettingsOf(db, accountId);
  const next = {
    logo_url: patch.logo_url === undefined ? current.logo_url : patch.logo_url,
    accent_color:
      patch.accent_color === undefined
        ? (current.accent_color?.toLowerCase() ?? null)
        : (patch.accent_color?.toLowerCase() ?? null),
  };
  await db
    .insertInto('account_branding')
    .values({ account_id: accountId, ...next, updated_at: at })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ ...next, updated_at: at }))
    .execute();
  return next;
}

/** What the portal shows: custom logo and colour only on plans that include custom branding. */
export async function portalBranding(
  db: Kysely<Database>,
  account: { id: string; name: string },
  customAllowed: boolean,
): Promise<Branding> {
  const settings = customAllowed
    ? await brandingSettingsOf(db, account.id)
    : { logo_url: null, accent_color: null };
  return { accountName: account.name, logoUrl: settings.logo_url, accentColor: settings.accent_color };
}

/** The logo's version: changes with the logo, so a cached old logo is never shown. */
export function logoVersion(logoUrl: string): string {
  return createHash('sha256').update(logoUrl).digest('hex').slice(0, 12);
}

/** Where the portal page shows an intake's logo: from this origin, never the data: URL itself. */
export function logoPath(intakeId: string, logoUrl: string): string {
  return `/portal/${encodeURIComponent(intakeId)}/logo?v=${logoVersion(logoUrl)}`;
}

/**
 * Where emails show an account's logo (mail clients show no data: URLs). The address names the
 * account, not an intake (image proxies see it), and answers only with the current logo's version,
 * so it cannot be guessed from the account id alone.
 */
export function emailLogoPath(accountId: string, logoUrl: string): string {
  return `/portal/brand/${encodeURIComponent(accountId)}/logo?v=${logoVersion(logoUrl)}`;
}

/** The account's logo decoded from its data: URL, on plans with custom branding. */
export async function accountLogo(
  db: Kysely<Database>,
  accountId: string,
): Promise<{ type: string; bytes: Buffer; version: string } | undefined> {
  const account = await db
    .selectFrom('accounts')
    .select('plan')
    .where('id', '=', accountId)
    .executeTakeFirst();
  if (!account || !planOf(account.plan).features.custom_branding) return undefined;
  const { logo_url: url } = await brandingSettingsOf(db, accountId);
  const match = url ? /^data:(image\/[a-z+]+);base64,(.*)$/.exec(url) : null;
  if (!url || !match?.[1] || match[2] === undefined) return undefined;
  return { type: match[1], bytes: Buffer.from(match[2], 'base64'), version: logoVersion(url) };
}

/** What an account's emails show of its branding (the email layout adds the account's name). */
export interface EmailBranding {
  /** An absolute http(s) address of the logo image (mail clients do not show data: URLs). */
  logoUrl: string | null;
  /** #rrggbb: the button and the band above the message; darkened if white text would not read on it. */
  accentColor: string | null;
}

/** What an account's emails show of it: its name and address, and its branding (see emailIdentity). */
export interface EmailIdentity {
  /** Undefined: no such account. */
  account: { name: string; email: string } | undefined;
  branding: EmailBranding;
}

/**
 * What an account's emails show of it, in one read (every email a job sends asks for it): its name
 * and address (undefined: no such account), and its branding, on plans with custom branding only.
 */
export async function emailIdentity(
  db: Kysely<Database>,
  accountId: string,
  appUrl: string,
): Promise<EmailIdentity> {
  const identities = await emailIdentities(db, [accountId], appUrl);
  return identities.get(accountId) ?? { account: undefined, branding: NO_EMAIL_BRANDING };
}

const identitiesQuery = (db: Kysely<Database>) =>
  db
    .selectFrom('accounts')
    .leftJoin('account_branding', 'account_branding.account_id', 'accounts.id')
    .select([
      'accounts.id',
      'accounts.name',
      'accounts.email',
      'accounts.plan',
      'account_branding.logo_url',
      'account_branding.accent_color',
    ]);
// Most messages are sent one account at a time: that read is compiled once.
const selectIdentityOf = preparedQuery(
  (db: Kysely<Database>, accountId: string) => identitiesQuery(db).where('accounts.id', '=', accountId),
  [''],
);

/** emailIdentity of several accounts in one statement (reminders dispatched together); unknown ones have no entry. */
export async function emailIdentities(
  db: Kysely<Database>,
  accountIds: readonly string[],
  appUrl: string,
): Promise<Map<string, EmailIdentity>> {
  const rows =
    accountIds.length === 1
      ? await selectIdentityOf(db, accountIds[0] ?? '')
      : await identitiesQuery(db).where('accounts.id', 'in', accountIds).execute();
  const identities = new Map<string, EmailIdentity>();
  for (const row of rows) {
    const account = { name: row.name, email: row.email };
    if (!planOf(row.plan).features.custom_branding) {
      identities.set(row.id, { account, branding: NO_EMAIL_BRANDING });
      continue;
    }
    const logoUrl = row.logo_url
      ? `${appUrl.replace(/\/+$/, '')}${emailLogoPath(row.id, row.logo_url)}`
      : null;
    identities.set(row.id, { account, branding: { logoUrl, accentColor: row.accent_color ?? null } });
  }
  return identities;
}

/** The branding of an account without custom branding (or of no account): none. */
export const NO_EMAIL_BRANDING: EmailBranding = Object.freeze({ logoUrl: null, accentColor: null });
