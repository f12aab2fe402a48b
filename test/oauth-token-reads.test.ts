/**
 * The refresh tokens of agents' sign-ins are read by indexes (migration 0052), never the table whole:
 * the plan's cap counts an account's live grants (at every key created and every sign-in), a person's
 * sign-ins end when they leave, the hourly sweep deletes expired tokens, and revoking an access token
 * finds its refresh token. The table holds every account's refreshes of the last 30 days.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { deleteExpiredGrants, findClient } from '../src/modules/oauth/oauth.repository.js';
import { countActiveGrants, registerClient, revokeToken } from '../src/modules/oauth/oauth.service.js';
import { endGrantsOfPerson } from '../src/modules/oauth/person-grants.js';
import { DATABASES } from './helpers/env.js';
import { planOf, wholeReads } from './helpers/plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

const DAY_MS = 86_400_000;

describe.each(DATABASES)("sign-ins' refresh tokens read by index, on %s", (database) => {
  let server: TestServer;
  const now = new Date();
  const iso = (offsetMs: number) => new Date(now.getTime() + offsetMs).toISOString();
  let clientId: string;
  const accounts: { id: string; owner: string }[] = [];

  const db = () => server.server.services.db.kysely;

  /** A refresh token of a grant: live, revoked, or expired. */
  async function token(account: { id: string; owner: string }, grant: string, state: string): Promise<void> {
    const id = newId('ort');
    await db()
      .insertInto('oauth_refresh_tokens')
      .values({
        token_hash: `hash-${id}`,
        id,
        grant_id: grant,
        client_id: clientId,
        account_id: account.id,
        livemode: 1,
        user_id: account.owner,
        scopes: '["intakes:read"]',
        resource: null,
        access_key_id: null,
        created_at: iso(-DAY_MS),
        expires_at: state === 'expired' ? iso(-60_000) : iso(29 * DAY_MS),
        revoked_at: state === 'revoked' ? iso(-3_600_000) : null,
      })
      .execute();
  }

  beforeAll(async () => {
    server = await startTestServer(database);
    for (let i = 0; i < 2; i++) {
      const account = await server.createAccount({ plan: 'agency' });
      const owner = await db()
        .selectFrom('account_users')
        .select('id')
        .where('account_id', '=', account.account_id)
        .executeTakeFirstOrThrow();
      accounts.push({ id: account.account_id, owner: owner.id });
    }
    const client = await registerClient(
      db(),
      {
        client_name: 'Token reads',
        redirect_uris: ['http://127.0.0.1/cb'],
        token_endpoint_auth_method: 'none',
      },
      now,
    );
    clientId = client.client_id;
    const [one, other] = accounts as [(typeof accounts)[0], (typeof accounts)[0]];
    // One account: a grant refreshed (its old token revoked), a second live grant, one expired and
    // one revoked. The other account: one live grant.
    await token(one, 'grant-refreshed', 'revoked');
    await token(one, 'grant-refreshed', 'live');
    await token(one, 'grant-live', 'live');
    await token(one, 'grant-expired', 'expired');
    await token(one, 'grant-revoked', 'revoked');
    await token(other, 'grant-elsewhere', 'live');
  });
  afterAll(async () => {
    await server.stop();
  });

  it("counts an account's live grants, each once, and none of another account's", async () => {
    const [one, other] = accounts as [(typeof accounts)[0], (typeof accounts)[0]];
    expect(await countActiveGrants(db(), one.id, now.toISOString())).toBe(2);
    expect(await countActiveGrants(db(), other.id, now.toISOString())).toBe(1);
  });

  it('reads, updates and deletes refresh tokens by an index, never the whole table', async () => {
    const [one, other] = accounts as [(typeof accounts)[0], (typeof accounts)[0]];
    const client = await findClient(db(), clientId);
    if (!client) throw new Error('no client');
    const recorder = recordStatements();
    try {
      await countActiveGrants(db(), one.id, now.toISOString());
      // An access token that is no refresh token: looked up by the key it would be.
      await revokeToken(db(), client, 'iak_not_a_refresh_token', now);
      await endGrantsOfPerson(db(), { accountId: other.id, userId: other.owner, at: now.toISOString() });
      expect(await deleteExpiredGrants(db(), now.toISOString())).toBe(1);
    } finally {
      recorder.stop();
    }
    const statements = recorder.statements.filter((s) =>
      /\b(from|update) "oauth_refresh_tokens"/.test(s.sql),
    );
    // The count, the refresh token by hash, the access token's, the person's, the sweep's.
    expect(statements.length).toBeGreaterThanOrEqual(5);
    for (const statement of statements) {
      const plan = await planOf(db(), database, statement);
      expect(
        await wholeReads(db(), database, plan, ['oauth_refresh_tokens']),
        `${statement.sql}\n${plan.join('\n')}`,
      ).toEqual([]);
    }
    // The person who left has no live grant; the first account's are as they were.
    expect(await countActiveGrants(db(), other.id, now.toISOString())).toBe(0);
    expect(await countActiveGrants(db(), one.id, now.toISOString())).toBe(2);
  });
});
