import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../../http/errors.js';
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
  findUserByEmail,
  insertSignInToken,
  insertUser,
  markSignedIn,
  type UserRow,
} from './sessions.repository.js';

/** A sign-in link works once, for 15 minutes. */
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;
/** Link requests per rolling hour: per address (no mailbox flooding) and per network address. */
export const SIGN_IN_LIMITS = { perEmail: 5, perIp: 30 } as const;

export function signInUrl(services: AppServices, token: string): string {
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
 * Sends a one-time sign-in link through the mail path every email takes: SMTP when configured,
 * otherwise the development outbox (stored like any captured email, and the link printed to the
 * server log, so a laptop install can sign in without a mail server).
 */
async function sendLink(services: AppServices, log: FastifyBaseLogger, mail: LinkEmail): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  const now = services.clock.now();
  await insertSignInToken(services.db.kysely, {
    token_hash: sha256Hex(token),
    user_id: mail.user.id,
    return_to: mail.returnTo,
    expires_at: new Date(now.getTime() + SIGN_IN_LINK_TTL_MS).toISOString(),
    created_at: now.toISOString(),
  });
  const url = signInUrl(services, token);
  const t = translator(mail.language, 'dashboard');
  const vars = {
    account: mail.accountName,
    inviter: mail.invitedBy ?? '',
    minutes: SIGN_IN_LINK_TTL_MS / 60_000,
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
  const expiry = t('email.expiry', 'The link works once, for {{minutes}} minutes.', vars);
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
    // Development only (no SMTP_URL): the outbox is the mailbox, and the log is where people look.
    log.info({ to: mail.user.email }, `Dashboard sign-in link (development outbox): ${url}`);
    return;
  }
  if (outcome.outcome !== 'sent') {
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
 * Emails a sign-in link when the address belongs to a user. The answer never says whether it does
 * (no account enumeration): the caller shows the same "check your email" page either way.
 */
export async function requestSignInLink(
  services: AppServices,
  log: FastifyBaseLogger,
  input: { email: string; ip: string; returnTo: string | null },
): Promise<void> {
  const email = input.email.trim().toLowerCase();
  await limitOrThrow(services, `dashboard-sign-in-ip:${input.ip}`, SIGN_IN_LIMITS.perIp);
  await limitOrThrow(services, `dashboard-sign-in:${sha256Hex(email)}`, SIGN_IN_LIMITS.perEmail);
  const user = await findUserByEmail(services.db.kysely, email);
  if (!user) return;
  const account = await accountOf(services, user.account_id);
  await sendLink(services, log, {
    kind: 'sign_in',
    user,
    accountName: account.name,
    language: account.default_language,
    returnTo: input.returnTo,
  });
}

async function accountOf(services: AppServices, accountId: string) {
  return services.db.kysely
    .selectFrom('accounts')
    .select(['name', 'default_language'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
}

/** Consumes a link; the user it signs in, or undefined when it is unknown, used or expired. */
export async function redeemSignInLink(
  services: AppServices,
  token: string,
): Promise<{ user: UserRow; returnTo: string | null } | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const nowIso = services.clock.now().toISOString();
  const consumed = await consumeSignInToken(services.db.kysely, sha256Hex(token), nowIso);
  if (!consumed) return undefined;
  const user = await services.db.kysely
    .selectFrom('account_users')
    .selectAll()
    .where('id', '=', consumed.user_id)
    .executeTakeFirst();
  if (!user) return undefined;
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
  return { user, returnTo: consumed.return_to };
}

/** Adds a user to the account and emails them a sign-in link. 409 when the address already has a user. */
export async function inviteUser(
  services: AppServices,
  log: FastifyBaseLogger,
  inviter: { userId: string; accountId: string; email: string },
  email: string,
): Promise<UserRow> {
  const address = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address) || address.length > 254) {
    throw new ApiError('invalid_request', `email: ${email} is not an email address.`);
  }
  if (await findUserByEmail(services.db.kysely, address)) {
    throw new ApiError('conflict', `${address} is already a user of an account.`);
  }
  const user: UserRow = {
    id: newId('usr'),
    account_id: inviter.accountId,
    email: address,
    role: 'member',
    invited_by_user_id: inviter.userId,
    created_at: services.clock.now().toISOString(),
    last_signed_in_at: null,
  };
  await insertUser(services.db.kysely, user);
  const account = await accountOf(services, inviter.accountId);
  await sendLink(services, log, {
    kind: 'invitation',
    user,
    accountName: account.name,
    language: account.default_language,
    returnTo: null,
    invitedBy: inviter.email,
  });
  return user;
}
