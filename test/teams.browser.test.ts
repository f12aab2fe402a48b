import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  chromiumAvailable,
  launchChromium,
  seriousAccessibilityProblems,
} from './helpers/browser.js';
import { ownerEmail, signInLinkOf } from './helpers/dashboard.js';
import { startSmtpServer } from './helpers/mail.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Teams in Debian's chromium: the owner invites a colleague as a member from the members page, the
 * colleague signs in with the invitation's link and sees what a member may use; what the role does
 * not allow answers 403. A second account invites the same person: the header's switcher lists both
 * accounts with the role in each and moves between them. Pages are checked with axe-core and
 * photographed at 1280 and 360 px.
 */
const available = chromiumAvailable('teams browser tests');

describe.skipIf(!available)('teams in a browser', () => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let browser: Browser;
  let app: string;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    smtp = await startSmtpServer();
    server = await startTestServer('sqlite', { SMTP_URL: smtp.url });
    app = server.server.services.config.appUrl;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.close();
  });

  it('invites a colleague, who signs in as a member and is refused what members may not do', async () => {
    const account = await server.createAccount({ plan: 'solo' });
    const owner = await ownerEmail(server, account.account_id);
    const colleague = 'sam.colleague@example.com';

    const ownerPage = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    ownerPage.setDefaultTimeout(8000);
    await ownerPage.goto(`${app}/dashboard/members`);
    await ownerPage.getByLabel('Email address').fill(owner);
    await ownerPage.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const [ownerMail] = await smtp.waitFor(owner);
    await ownerPage.goto(signInLinkOf(ownerMail?.parsed.text ?? ''));
    await ownerPage.getByRole('button', { name: 'Sign in to the dashboard' }).click();
    await ownerPage.waitForURL(/\/dashboard\/members/);

    await ownerPage.getByLabel('Email', { exact: true }).fill(colleague);
    await ownerPage.getByLabel('Name (optional)').fill('Sam Colleague');
    await ownerPage.getByRole('radio', { name: /Member/ }).check();
    await ownerPage.getByRole('button', { name: 'Send invitation' }).click();
    await ownerPage.getByText('Invitation sent.').waitFor();
    const row = ownerPage.locator(`tr[data-member="${colleague}"]`);
    await row.getByText('invited').waitFor();
    expect(await seriousAccessibilityProblems(ownerPage)).toEqual([]);
    await ownerPage.screenshot({ path: join(ARTIFACTS, 'teams-members-1280.png'), fullPage: true });
    await ownerPage.setViewportSize({ width: 360, height: 800 });
    await ownerPage.screenshot({ path: join(ARTIFACTS, 'teams-members-360.png'), fullPage: true });

    const [invitation] = await smtp.waitFor(colleague);
    expect(invitation?.parsed.subject).toContain('invited');
    const memberPage = await (await browser.newContext({ viewport: { width: 360, height: 800 } })).newPage();
    memberPage.setDefaultTimeout(8000);
    await memberPage.goto(signInLinkOf(invitation?.parsed.text ?? ''));
    await memberPage.getByRole('button', { name: 'Sign in to the dashboard' }).click();
    await memberPage.waitForURL(/\/dashboard\/intakes/);
    // Signed in as themself (the header names the person; phones hide it to save room).
    expect(await memberPage.locator('header.top').textContent()).toContain(colleague);
    const nav = memberPage.getByRole('navigation', { name: 'Dashboard' });
    await nav.getByRole('link', { name: 'Intakes' }).waitFor();
    expect(await nav.getByRole('link', { name: 'API keys' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Members' }).count()).toBe(0);
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-member-intakes-360.png'), fullPage: true });

    const refused = await memberPage.goto(`${app}/dashboard/members`);
    expect(refused?.status()).toBe(403);
    await memberPage.getByText('Your role (member) does not allow this.').first().waitFor();
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-refused-360.png'), fullPage: true });

    await ownerPage.reload();
    await row.getByText('active').waitFor();

    // A second account invites the same person as a viewer: accepting adds it, and the header's
    // switcher lists both accounts with the role in each.
    const agency = await server.createAccount({ plan: 'agency' });
    const db = server.server.services.db.kysely;
    await db
      .updateTable('accounts')
      .set({ name: 'Northwind Studio' })
      .where('id', '=', account.account_id)
      .execute();
    await db
      .updateTable('accounts')
      .set({ name: 'Brightside Agency' })
      .where('id', '=', agency.account_id)
      .execute();
    const invited = await fetch(`${server.url}/v1/members`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agency.live_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: colleague, role: 'viewer' }),
    });
    expect(invited.status).toBe(201);
    const mails = await smtp.waitFor(colleague, 2);
    await memberPage.goto(signInLinkOf(mails[1]?.parsed.text ?? ''));
    await memberPage.getByRole('button', { name: 'Sign in to the dashboard' }).click();
    await memberPage.waitForURL(/\/dashboard\/intakes/);
    const switcher = memberPage.getByRole('combobox', { name: 'Account' });
    expect(await switcher.inputValue()).toBe(agency.account_id);
    expect(await switcher.locator('option').allTextContents()).toEqual(
      expect.arrayContaining([
        expect.stringContaining('Brightside Agency (Viewer)'),
        expect.stringContaining('Northwind Studio (Member)'),
      ]),
    );
    expect(await seriousAccessibilityProblems(memberPage)).toEqual([]);
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-switcher-360.png'), fullPage: true });

    // A viewer who opens the builder by its address is told so at once, not after filling it in.
    const builder = await memberPage.goto(`${app}/dashboard/intakes/new`);
    expect(builder?.status()).toBe(403);
    await memberPage.getByText('Your role (viewer) does not allow this.').first().waitFor();
    expect(await seriousAccessibilityProblems(memberPage)).toEqual([]);
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-viewer-builder-360.png'), fullPage: true });
    await memberPage.setViewportSize({ width: 1280, height: 800 });
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-viewer-builder-1280.png'), fullPage: true });
    await memberPage.setViewportSize({ width: 360, height: 800 });
    await memberPage.goto(`${app}/dashboard/intakes`);

    await switcher.selectOption(account.account_id);
    await memberPage.getByRole('button', { name: 'Switch', exact: true }).click();
    await memberPage.getByText('Now in Northwind Studio.').waitFor();
    expect(await switcher.inputValue()).toBe(account.account_id);
    await memberPage.setViewportSize({ width: 1280, height: 800 });
    expect(await seriousAccessibilityProblems(memberPage)).toEqual([]);
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-switcher-1280.png'), fullPage: true });

    await memberPage.goto(`${app}/dashboard/accounts`);
    await memberPage.getByRole('heading', { name: 'Your accounts' }).waitFor();
    expect(await seriousAccessibilityProblems(memberPage)).toEqual([]);
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-accounts-1280.png'), fullPage: true });
    await memberPage.setViewportSize({ width: 360, height: 800 });
    await memberPage.screenshot({ path: join(ARTIFACTS, 'teams-accounts-360.png'), fullPage: true });
  });
});
