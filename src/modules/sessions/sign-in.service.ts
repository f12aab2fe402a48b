import { randomBytes } from 'node:crypto';
import { ApiError } from '../../http/errors.js';
import { enqueueJob } from '../../jobs/jobs.js';
import { translator } from '../../i18n/index.js';
import { newId } from '../../lib/ids.js';
import { sha256Hex } from '../../lib/secrets.js';
import type { AppServices } from '../../services.js';
import { insertAuditEntry } from '../audit/audit.service.js';
import { escapeHtml } from '../notify/notify.templates.js';
import { recordMessageCopy } from '../notify/notify.service.js';
import { transmit } from '../notify/notify.service.js';
import {
  consumeSignInToken,
  deleteSignInToken,
  findUserById,
  findUserInAccount,
  insertSignInToken,
  insertUser,
  lastUsableSignInLinkAt,
  markSignedIn,
  membershipsOf,
  type UserRow,
} from './sessions.repository.js';
import { SEND_SIGN_IN_LINK } from './sign-in.jobs.js';

/** A sign-in link works once, for 15 minutes. */
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;
/** An invitation's link works once, for 7 days: a colleague may read it the next morning. */
export const INVITATION_LINK_TTL_MS = 7 * 86_400_000;
/** Link requests per rolling hour from one network address (the client's, behind TRUST_PROXY). */
export const SIGN_IN_LIMITS = { perIp: 30 } as const;
/**
 * At most one email per address in this long while its last link is unused (no mailbox flooding).
 * Not a refusal: the page says "check your email" either way, and the link sent within the cool-down
 * still works (15 minutes), so a stranger asking for someone's address cannot lock them out, only
 * trigger the link they receive. A used or expired link holds nothing: the next request sends at once.
 */
export const SIGN_IN_EMAIL_COOLDOWN_MS = 60_000;

export function signInUrl(services: { config: { appUrl: string } }, token: string): string {
  return `${services.config.appUrl}/dashboard/sign-in/confirm?token=${token}`;
}

interface LinkEmail {
  kind: 'sign_in' | 'invitation';
  user: UserRow;
  accountName: string;
  language: string;
  returnTo: string | null;
  invitedBy?: string;
}

/**
 * Without SMTP_URL, production has no way to deliver a sign-in link (development keeps it in the
 * outbox, and `intake sign-in-link` prints one): say so plainly instead of pretending to send it.
 */
export function assertSignInDeliverable(config: { production: boolean; smtpUrl: string | undefined }): void {
  if (!config.production || config.smtpUrl) return;
  throw new ApiError(
    'service_unavailable',
    'Email sign-in is not set up on this server: its operator must set SMTP_URL (see the deployment guide). Until then, the operator can print a one-time link with `intake sign-in-link --email <address>`.',
  );
}

/** A new one-time link for a user (15 minutes, one use): only its hash is stored. */
async function mintSignInToken(
  services: Pick<AppServices, 'db' | 'clock'>,
  user: UserRow,
  returnTo: string | null,
  purpose: 'sign_in' | 'invitation',
): Promise<{ token: string; tokenHash: string }> {
  const token = randomBytes(32).toString('base64url');
  const tokenHash = sha256Hex(token);
  const now = services.clock.now();
  await insertSignInToken(services.db.kysely, {
    token_hash: tokenHash,
    user_id: user.id,
    return_to: returnTo,
    expires_at: new Date(
      now.getTime() + (purpose === 'invitation' ? INVITATION_LINK_TTL_MS : SIGN_IN_LINK_TTL_MS),
    ).toISOString(),
    created_at: now.toISOString(),
    purpose,
  });
  return { token, tokenHash };
}

/**
 * The account a sign-in link of this address lands in: the one its person used last, else their
 * oldest membership (a person of several accounts who used none yet then chooses, after the link).
 */
async function landingUser(db: AppServices['db']['kysely'], email: string): Promise<UserRow | undefined> {
  const [first] = await membershipsOf(db, email);
  return first ? findUserById(db, first.user_id) : undefined;
}

/**
 * The operator's way in without a mail server (`intake sign-in-link`): a one-time link for the user
 * of this address, printed on the operator's terminal, never logged; undefined for an unknown address.
 */
export async function issueSignInLink(
  services: Pick<AppServices, 'db' | 'clock' | 'config'>,
  email: string,
): Promise<string | undefined> {
  const user = await landingUser(services.db.kysely, email);
  if (!user) return undefined;
  const { token } = await mintSignInToken(services, user, null, 'invitation');
  return signInUrl(services, token);
}

/**
 * Sends a one-time sign-in link through the mail path every email takes: SMTP when configured,
 * otherwise the development outbox (stored like any captured email). The link is never logged.
 */
async function sendLink(services: AppServices, mail: LinkEmail): Promise<void> {
  const now = services.clock.now();
  const { token, tokenHash } = await mintSignInToken(services, mail.user, mail.returnTo, mail.kind);
  const url = signInUrl(services, token);
  const t = translator(mail.language, 'dashboard');
  const vars = {
    account: mail.accountName,
    inviter: mail.invitedBy ?? '',
    minutes: SIGN_IN_LINK_TTL_MS / 60_000,
    days: INVITATION_LINK_TTL_MS / 86_400_000,
  };
  const copy = {
    sign_in: {
      subject: t('email.sign_in.subject', 'Your sign-in link for {{account}}', vars),
      intro: t('email.sign_in.intro', 'Use this link to sign in to the {{account}} dashboard:', vars),
    },
    invitation: {
      subject: t('email.invitation.subject', 'You are invited to {{account}}', vars),
      intro: t(
        'email.invitation.intro',
        '{{inviter}} invited you to the {{account}} dashboard. Sign in with this link:',
        vars,
      ),
    },
  }[mail.kind];
  const subject = copy.subject;
  const intro = copy.intro;
  const expiry =
    mail.kind === 'invitation'
      ? t('email.invitation_expiry', 'The link works once, for {{days}} days.', vars)
      : t('email.expiry', 'The link works once, for {{minutes}} minutes.', vars);
  const ignore = t('email.ignore', 'If you did not ask for it, ignore this email.');
  const text = `${intro}\n\n${url}\n\n${expiry} ${ignore}\n`;
  const html = `<p>${escapeHtml(intro)}</p><p><a href="${escapeHtml(url)}">${escapeHtml(t('email.button', 'Sign in'))}</a></p><p>${escapeHtml(`${expiry} ${ignore}`)}</p>`;
  const messageId = newId('msg');
  const outcome = await transmit(services, true, {
    messageId,
    channel: 'email',
    to: mail.user.email,
    subject,
    text,
    html,
    fromName: mail.accountName,
    replyTo: null,
  });
  if (outcome.outcome === 'captured') {
    await recordMessageCopy(services.db.kysely, {
      id: messageId,
      accountId: mail.user.account_id,
      livemode: true,
      intakeId: null,
      chaseId: null,
      channel: 'email',
      template: mail.kind,
      to: mail.user.email,
      subject,
      text,
      html,
      status: 'captured',
      providerMessageId: null,
      error: null,
      createdAt: now.toISOString(),
      sentAt: null,
    });
    return;
  }
  if (outcome.outcome !== 'sent') {
    // Not sent: the link never existed, so it does not hold the address's cool-down either.
    await deleteSignInToken(services.db.kysely, tokenHash);
    throw new ApiError('service_unavailable', 'The sign-in email could not be sent. Try again in a minute.');
  }
}

async function limitOrThrow(services: AppServices, bucket: string, limit: number): Promise<void> {
  const decision = await services.limiter.hit(bucket, limit, services.clock.now().getTime());
  if (!decision.allowed) {
    throw new ApiError(
      'rate_limited',
      `Too many sign-in links requested. Try again in ${Math.ceil(decision.retryAfterSeconds / 60)} minutes.`,
      {},
      { 'Retry-After': String(decision.retryAfterSeconds) },
    );
  }
}

/**
 * Queues a sign-in link for an address, and nothing else: whether the address belongs to a user is
 * decided by the job (SEND_SIGN_IN_LINK), so the answer takes the same time either way (no account
 * enumeration by timing) and the caller shows the same "check your email" page. Limited per network
 * address only; the per-address cool-down is the job's, and never refuses a request.
 */
export async function requestSignInLink(
  services: AppServices,
  input: { email: string; ip: string; returnTo: string | null },
): Promise<void> {
  assertSignInDeliverable(services.config);
  const email = input.email.trim().toLowerCase();
  await limitOrThrow(services, `dashboard-sign-in-ip:${input.ip}`, SIGN_IN_LIMITS.perIp);
  const addressHash = sha256Hex(email);
  await enqueueJob(services.db.kysely, {
    accountId: 'system',
    livemode: true,
    kind: SEND_SIGN_IN_LINK,
    subjectId: `sign-in/${addressHash}`,
    payload: { email, return_to: input.returnTo },
    dueAt: services.clock.now().getTime(),
    uniqueKey: `send_sign_in_link:${addressHash}`,
  });
}

/** The SEND_SIGN_IN_LINK job: a link to the address's user, unless one went out within the cool-down. */
export async function runSignInLinkJob(
  services: AppServices,
  payload: { email: string; return_to: string | null },
): Promise<void> {
  const user = await landingUser(services.db.kysely, payload.email);
  if (!user) return;
  const now = services.clock.now();
  const last = await lastUsableSignInLinkAt(services.db.kysely, user.id, now.toISOString());
  if (last && now.getTime() - Date.parse(last) < SIGN_IN_EMAIL_COOLDOWN_MS) return;
  const account = await accountOf(services, user.account_id);
  await sendLink(services, {
    kind: 'sign_in',
    user,
    accountName: account.name,
    language: account.default_language,
    returnTo: payload.return_to,
  });
}

async function accountOf(services: AppServices, accountId: string) {
  return services.db.kysely
    .selectFrom('accounts')
    .select(['name', 'default_language'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
}

/**
 * Consumes a link; the user it signs in, or undefined when it is unknown, used or expired. `choose`:
 * the person belongs to several accounts and has used none of them yet, so the dashboard asks which
 * (an invitation's link always lands in the account that invited them).
 */
export async function redeemSignInLink(
  services: AppServices,
  token: string,
): Promise<{ user: UserRow; returnTo: string | null; choose: boolean } | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const nowIso = services.clock.now().toISOString();
  const db = services.db.kysely;
  const consumed = await consumeSignInToken(db, sha256Hex(token), nowIso);
  if (!consumed) return undefined;
  const user = await findUserById(db, consumed.user_id);
  if (!user) return undefined;
  const active = (await membershipsOf(db, user.email)).filter(
    (m) => m.status === 'active' || m.user_id === user.id,
  );
  const choose =
    consumed.purpose === 'sign_in' && active.length > 1 && active.every((m) => m.last_used_at === null);
  await markSignedIn(services.db.kysely, user.id, nowIso);
  await insertAuditEntry(services.db.kysely, {
    account_id: user.account_id,
    livemode: 1,
    action: 'user.sign_in',
    resource_type: 'user',
    resource_id: user.id,
    actor_type: 'user',
    actor_id: user.id,
    request_id: null,
    created_at: nowIso,
  });
  return { user, returnTo: consumed.return_to, choose };
}

/**
 * Adds a person to the account with a role, `invited` until they use their link (sendInvitation).
 * 409 when the address is already one of this account's people; a person of another account is
 * welcome (the link adds this account to theirs). Roles and seats are the members service's to check
 * before, in the same transaction.
 */
export async function addInvitee(
  services: Pick<AppServices, 'config' | 'clock'>,
  db: AppServices['db']['kysely'],
  inviter: { userId: string | null; accountId: string },
  invitee: { email: string; name?: string | null | undefined; role: string },
): Promise<UserRow> {
  assertSignInDeliverable(services.config);
  const email = invitee.email;
  const address = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address) || address.length > 254) {
    throw new ApiError('invalid_request', `email: ${email} is not an email address.`);
  }
  if (await findUserInAccount(db, inviter.accountId, address)) {
    throw new ApiError('conflict', `${address} is already one of this account's people.`);
  }
  const user: UserRow = {
    id: newId('mem'),
    account_id: inviter.accountId,
    email: address,
    role: invitee.role,
    invited_by_user_id: inviter.userId,
    created_at: services.clock.now().toISOString(),
    last_signed_in_at: null,
    name: invitee.name ?? null,
    status: 'invited',
    last_used_at: null,
  };
  await insertUser(db, user);
  return user;
}

/** Emails an invited person their one-time link (7 days), naming who invited them. */
export async function sendInvitation(
  services: AppServices,
  user: UserRow,
  inviterEmail: string,
): Promise<void> {
  const account = await accountOf(services, user.account_id);
  await sendLink(services, {
    kind: 'invitation',
    user,
    accountName: account.name,
    language: account.default_language,
    returnTo: null,
    invitedBy: inviterEmail,
  });
}
