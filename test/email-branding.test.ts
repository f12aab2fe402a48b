/**
 * What an account's emails carry of it (emailIdentity, read once per email a job sends): its name and
 * address, and of its branding the logo as an absolute address and the accent colour on a plan with
 * custom branding, nothing on a plan without it even where settings were saved, and nothing for an
 * account without settings or an account that does not exist. On both databases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailIdentity, updateBranding } from '../src/modules/accounts/branding.js';
import { DATABASES } from './helpers/env.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const LOGO = `data:image/png;base64,${Buffer.from('not really a png').toString('base64')}`;
const APP_URL = 'https://intake.example.test/';

describe.each(DATABASES)('email branding on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  const branded = async (plan: 'agency' | 'solo', settings: boolean) => {
    const { account_id } = await server.createAccount({ plan });
    const db = server.server.services.db.kysely;
    if (settings) {
      await updateBranding(
        db,
        account_id,
        { logo_url: LOGO, accent_color: '#0F766E' },
        new Date().toISOString(),
      );
    }
    return { accountId: account_id, branding: (await emailIdentity(db, account_id, APP_URL)).branding };
  };

  it('carries the logo by its absolute address and the accent on a plan with custom branding', async () => {
    const { accountId, branding } = await branded('agency', true);
    expect(branding.accentColor).toBe('#0f766e');
    expect(branding.logoUrl).toMatch(
      new RegExp(`^https://intake\\.example\\.test/portal/brand/${accountId}/logo\\?v=[0-9a-f]{12}$`),
    );
  });

  it('carries nothing on a plan without custom branding, even with settings saved', async () => {
    expect((await branded('solo', true)).branding).toEqual({ logoUrl: null, accentColor: null });
  });

  it('carries nothing for an account without settings, or one that does not exist', async () => {
    expect((await branded('agency', false)).branding).toEqual({ logoUrl: null, accentColor: null });
    const missing = await emailIdentity(server.server.services.db.kysely, 'acct_missing', APP_URL);
    expect(missing).toEqual({ account: undefined, branding: { logoUrl: null, accentColor: null } });
  });

  it("reads the account's name and address with its branding, on every plan", async () => {
    const db = server.server.services.db.kysely;
    for (const plan of ['agency', 'solo'] as const) {
      const { account_id } = await server.createAccount({ plan });
      const row = await db
        .selectFrom('accounts')
        .select(['name', 'email'])
        .where('id', '=', account_id)
        .executeTakeFirstOrThrow();
      const identity = await emailIdentity(db, account_id, APP_URL);
      expect(identity.account).toEqual({ name: row.name, email: row.email });
      // No settings saved: nothing to show, whatever the plan.
      expect(identity.branding).toEqual({ logoUrl: null, accentColor: null });
    }
  });
});
