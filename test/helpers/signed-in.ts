import type { Browser, Page } from 'playwright-core';
import { openSession } from '../../src/modules/sessions/session.js';
import type { TestServer } from './server.js';

export interface SignedInBrowser {
  userId: string;
  /** The Cookie header of a signed-in dashboard browser. */
  cookie: string;
  /** GET with the session cookie; redirects are not followed, so each step can be checked. */
  get(url: string): Promise<Response>;
  /** POST a form with the session cookie (redirects not followed). */
  postForm(url: string, fields: Record<string, string | string[]>): Promise<Response>;
}

/**
 * A dashboard session for the account's owner, as sign-in by emailed link leaves it (the sign-in
 * flow itself is the dashboard's tests' subject): a session row and its cookie.
 */
export async function signedInOwner(server: TestServer, accountId: string): Promise<SignedInBrowser> {
  const db = server.server.services.db.kysely;
  const user = await db
    .selectFrom('account_users')
    .select('id')
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return signedInAs(server, accountId, user.id);
}

/** A dashboard session (live data) for one person of the account, whatever their role. */
export async function signedInAs(
  server: TestServer,
  accountId: string,
  userId: string,
): Promise<SignedInBrowser> {
  const db = server.server.services.db.kysely;
  const raw = await openSession(db, { id: userId, account_id: accountId }, true, new Date());
  const cookie = `intake_session=${raw}`;
  return {
    userId,
    cookie,
    get: (url) => fetch(url, { headers: { cookie }, redirect: 'manual' }),
    postForm: (url, fields) => {
      const body = new URLSearchParams();
      for (const [name, value] of Object.entries(fields)) {
        for (const item of Array.isArray(value) ? value : [value]) body.append(name, item);
      }
      return fetch(url, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: body.toString(),
        redirect: 'manual',
      });
    },
  };
}

/** The value of a hidden form field in a page (the CSRF token, a flow's id). */
export function hiddenField(page: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
  if (match?.[1] === undefined) throw new Error(`No hidden field ${name} in the page`);
  return match[1].replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&#39;', "'");
}

/**
 * A chromium page signed in as `person` (their session cookie on the app's address), in the viewer's
 * language and time zone of the dashboard's browser tests; dialogs are accepted, waits end at 8 s.
 */
export async function signedInPage(
  browser: Browser,
  app: string,
  person: SignedInBrowser,
  viewport: { width: number; height: number } = { width: 1280, height: 900 },
): Promise<Page> {
  const context = await browser.newContext({ viewport, locale: 'en-GB', timezoneId: 'Europe/Berlin' });
  const [name, value] = person.cookie.split('=') as [string, string];
  await context.addCookies([{ name, value, url: app, httpOnly: true, sameSite: 'Lax' }]);
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  page.setDefaultTimeout(8000);
  return page;
}
