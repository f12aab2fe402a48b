import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FileStore } from '@tus/file-store';
import { Upload } from '@tus/utils';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { DATABASES } from './helpers/env.js';
import { client } from './helpers/http.js';
import { answer, eventually, startReceiver, type Receiver } from './helpers/receivers.js';
import { planOf } from './helpers/plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

/**
 * The retention sweepers are recurring jobs planned when a worker starts. Each run removes what has
 * expired and nothing else, and plans the next run. (Orphaned stored files have their own sweeper,
 * sweep_orphan_files: test/stored-files.test.ts.)
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

describe.each(DATABASES)('retention sweepers on %s', (database) => {
  let server: TestServer;
  let hooks: Receiver;
  beforeAll(async () => {
    // Webhook logs are kept 10 days here (default 30), to show the setting is the one applied.
    server = await startTestServer(database, { WEBHOOK_LOG_DAYS: '10' });
    hooks = await startReceiver(answer(200, 'ok'));
  });
  afterAll(async () => {
    await server.stop();
    await hooks.close();
  });

  const db = () => server.server.services.db.kysely;

  /** Runs the planned job of a sweeper now; checks that it planned its next run an interval later. */
  async function sweep(kind: string): Promise<void> {
    const planned = await db().selectFrom('jobs').selectAll().where('kind', '=', kind).execute();
    expect(planned).toHaveLength(1);
    const job = planned[0];
    if (!job) throw new Error('no planned job');
    expect(job.unique_key).toBe(`recurring:${kind}`);
    const before = Date.now();
    expect(await server.server.worker.runNow([job.id])).toBe(1);
    const next = await db().selectFrom('jobs').selectAll().where('kind', '=', kind).execute();
    expect(next).toHaveLength(1);
    expect(next[0]?.id).not.toBe(job.id);
    expect(next[0]?.last_error).toBeNull();
    expect(Number(next[0]?.due_at)).toBeGreaterThanOrEqual(before + HOUR_MS);
  }

  it('sweep_expired_auth removes expired OAuth grants, access tokens, sign-in links and sessions only', async () => {
    const account = await server.createAccount();
    const user = newId('usr');
    await db()
      .insertInto('account_users')
      .values({
        id: user,
        account_id: account.account_id,
        email: `sweep-${database}@example.com`,
        role: 'owner',
        invited_by_user_id: null,
        created_at: iso(-DAY_MS),
        last_signed_in_at: null,
        name: null,
        status: 'active',
      })
      .execute();
    const clientId = newId('ocl');
    await db()
      .insertInto('oauth_clients')
      .values({
        id: clientId,
        name: 'Sweep test',
        redirect_uris: '["http://127.0.0.1/cb"]',
        auth_method: 'none',
        secret_hash: null,
        created_at: iso(-DAY_MS),
      })
      .execute();
    const tenant = { account_id: account.account_id, livemode: 1, user_id: user, scopes: '["intakes:read"]' };
    for (const [hash, expires] of [
      ['code-expired', iso(-60_000)],
      ['code-live', iso(5 * 60_000)],
    ] as const) {
      await db()
        .insertInto('oauth_codes')
        .values({
          code_hash: hash,
          client_id: clientId,
          ...tenant,
          redirect_uri: 'http://127.0.0.1/cb',
          code_challenge: 'x',
          resource: null,
          created_at: iso(-DAY_MS),
          expires_at: expires,
          used_at: null,
        })
        .execute();
    }
    for (const [hash, expires] of [
      ['refresh-expired', iso(-60_000)],
      ['refresh-live', iso(DAY_MS)],
    ] as const) {
      await db()
        .insertInto('oauth_refresh_tokens')
        .values({
          token_hash: hash,
          id: `ort_${hash}`,
          grant_id: `ort_${hash}`,
          client_id: clientId,
          ...tenant,
          resource: null,
          access_key_id: null,
          created_at: iso(-DAY_MS),
          expires_at: expires,
          revoked_at: null,
        })
        .execute();
    }
    // Device authorizations get a day of grace after expiry (a late poll still hears "expired").
    for (const [hash, expires] of [
      ['device-long-expired', iso(-2 * DAY_MS)],
      ['device-just-expired', iso(-HOUR_MS)],
      ['device-live', iso(10 * 60_000)],
    ] as const) {
      await db()
        .insertInto('device_authorizations')
        .values({
          device_code_hash: hash,
          user_code: hash.toUpperCase(),
          client_name: 'cli',
          requested_scopes: '[]',
          status: 'pending',
          account_id: null,
          livemode: null,
          user_id: null,
          scopes: null,
          interval_seconds: 5,
          last_polled_ms: null,
          created_at: iso(-3 * DAY_MS),
          expires_at: expires,
        })
        .execute();
    }
    for (const [id, expires] of [
      ['key_expired_token', iso(-60_000)],
      ['key_live_token', iso(HOUR_MS)],
    ] as const) {
      await db()
        .insertInto('api_keys')
        .values({
          id,
          account_id: account.account_id,
          livemode: 1,
          name: id,
          scopes: '["intakes:read"]',
          prefix: 'svc_live_x',
          key_hash: `hash-${id}-${database}`,
          created_by_key_id: null,
          created_at: iso(-DAY_MS),
          last_used_at: null,
          revoked_at: null,
          expires_at: expires,
        })
        .execute();
    }
    for (const [hash, expires] of [
      ['session-expired', iso(-60_000)],
      ['session-live', iso(DAY_MS)],
    ] as const) {
      await db()
        .insertInto('user_sessions')
        .values({
          id_hash: hash,
          user_id: user,
          account_id: account.account_id,
          livemode: 1,
          created_at: iso(-DAY_MS),
          expires_at: expires,
          last_seen_at: iso(-HOUR_MS),
        })
        .execute();
      await db()
        .insertInto('sign_in_tokens')
        .values({
          token_hash: `link-${hash}`,
          user_id: user,
          return_to: null,
          expires_at: expires,
          used_at: null,
          created_at: iso(-DAY_MS),
        })
        .execute();
    }
    const keysBefore = await db()
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', account.account_id)
      .execute();

    await sweep('sweep_expired_auth');

    const ids = async (table: 'oauth_codes' | 'oauth_refresh_tokens', column: 'code_hash' | 'token_hash') =>
      (await db().selectFrom(table).select(column).execute()).map((row) => Object.values(row)[0]);
    expect(await ids('oauth_codes', 'code_hash')).toEqual(['code-live']);
    expect(await ids('oauth_refresh_tokens', 'token_hash')).toEqual(['refresh-live']);
    const devices = await db().selectFrom('device_authorizations').select('device_code_hash').execute();
    expect(devices.map((d) => d.device_code_hash).sort()).toEqual(['device-just-expired', 'device-live']);
    const keys = await db()
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', account.account_id)
      .execute();
    // Only the expired access token went; the account's own keys (no expiry) stay.
    expect(keys.map((k) => k.id).sort()).toEqual(
      keysBefore
        .map((k) => k.id)
        .filter((id) => id !== 'key_expired_token')
        .sort(),
    );
    const sessions = await db().selectFrom('user_sessions').select('id_hash').execute();
    expect(sessions.map((s) => s.id_hash)).toEqual(['session-live']);
    const links = await db().selectFrom('sign_in_tokens').select('token_hash').execute();
    expect(links.map((l) => l.token_hash)).toEqual(['link-session-live']);
  });

  it('sweep_webhook_logs removes attempt logs and finished deliveries older than WEBHOOK_LOG_DAYS only', async () => {
    const account = await server.createAccount();
    const api = client(server.url, account.live_key);
    const endpoint = await api.post('/v1/webhooks', { url: hooks.url, events: ['intake.sent'] });
    expect(endpoint.status, endpoint.text).toBe(201);
    const endpointId = String(endpoint.body.id);
    for (const name of ['old', 'recent', 'pending']) {
      const created = await api.post('/v1/intakes', {
        project_name: name,
        client: { email: `${name}@example.com` },
        items: [{ key: 'note', label: 'Note', type: 'text' }],
        chase_schedule: 'off',
      });
      expect(created.status, created.text).toBe(201);
    }
    const deliveries = await eventually(async () => {
      const rows = await db()
        .selectFrom('webhook_deliveries')
        .select(['id', 'status'])
        .where('endpoint_id', '=', endpointId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.length === 3 && rows.every((row) => row.status === 'succeeded') ? rows : undefined;
    }, 'three delivered webhooks');
    const [old, recent, pending] = deliveries.map((row) => row.id);
    if (!old || !recent || !pending) throw new Error('deliveries missing');
    // Eleven days ago: past the 10 days kept. Nine days ago: within them.
    await db()
      .updateTable('webhook_deliveries')
      .set({ completed_at: iso(-11 * DAY_MS) })
      .where('id', '=', old)
      .execute();
    await db()
      .updateTable('webhook_attempts')
      .set({ requested_at: iso(-11 * DAY_MS) })
      .where('delivery_id', 'in', [old, pending])
      .execute();
    await db()
      .updateTable('webhook_deliveries')
      .set({ completed_at: iso(-9 * DAY_MS) })
      .where('id', '=', recent)
      .execute();
    // A delivery still pending stays whatever its age; its old attempt log goes.
    await db()
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', completed_at: null })
      .where('id', '=', pending)
      .execute();

    await sweep('sweep_webhook_logs');

    const left = await db()
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .execute();
    expect(left.map((row) => row.id).sort()).toEqual([recent, pending].sort());
    const attempts = await db()
      .selectFrom('webhook_attempts')
      .select('delivery_id')
      .where('endpoint_id', '=', endpointId)
      .execute();
    expect(attempts.map((row) => row.delivery_id)).toEqual([recent]);
  });

  it('sweep_idempotency_keys removes keys remembered over 24 hours only, however many', async () => {
    const account = await server.createAccount();
    const api = client(server.url, account.live_key);
    const keyed = (key: string) =>
      api.post(
        '/v1/intakes',
        {
          project_name: key,
          client: { email: 'dana@example.com' },
          items: [{ key: 'note', label: 'Note', type: 'text' }],
          chase_schedule: 'off',
        },
        { headers: { 'idempotency-key': key } },
      );
    for (const key of ['kept', 'expired']) expect((await keyed(key)).status).toBe(201);
    const keyRow = await db()
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', account.account_id)
      .where('idem_key', '=', 'expired')
      .executeTakeFirstOrThrow();
    await db()
      .updateTable('idempotency_keys')
      .set({ created_at: iso(-DAY_MS - HOUR_MS) })
      .where('account_id', '=', account.account_id)
      .where('idem_key', '=', 'expired')
      .execute();
    // More expired keys than one statement deletes (500), and one just inside the 24 hours.
    const rows = Array.from({ length: 1_203 }, (_, n) => ({
      ...keyRow,
      idem_key: `old-${n}`,
      created_at: iso(-2 * DAY_MS - n * 1000),
    }));
    for (let at = 0; at < rows.length; at += 100) {
      await db()
        .insertInto('idempotency_keys')
        .values(rows.slice(at, at + 100))
        .execute();
    }
    await db()
      .insertInto('idempotency_keys')
      .values({ ...keyRow, idem_key: 'almost', created_at: iso(-DAY_MS + HOUR_MS) })
      .execute();

    const recorder = recordStatements();
    try {
      await sweep('sweep_idempotency_keys');
    } finally {
      recorder.stop();
    }
    // Three statements of 500 at most, each by the keys' index of their age and their own key.
    const deletes = recorder.statements.filter((st) => /^\s*delete from idempotency_keys/i.test(st.sql));
    expect(deletes).toHaveLength(3);
    const [first] = deletes;
    if (!first) throw new Error('no delete');
    const steps = await planOf(db(), database, first);
    expect(steps.join('\n'), first.sql).toContain('idempotency_keys_created');
    expect(
      steps.filter((step) => /^SCAN idempotency_keys\b|Seq Scan on idempotency_keys/.test(step)),
    ).toEqual([]);

    const left = await db()
      .selectFrom('idempotency_keys')
      .select('idem_key')
      .where('account_id', '=', account.account_id)
      .orderBy('idem_key')
      .execute();
    expect(left.map((row) => row.idem_key)).toEqual(['almost', 'kept']);
    // The kept key still answers a retry with the first intake; the swept one creates anew.
    expect((await keyed('kept')).status).toBe(200);
    expect((await keyed('expired')).status).toBe(201);
  });

  it('sweep_abandoned_uploads removes unfinished tus uploads begun over a day ago only', async () => {
    const directory = join(server.dataDir, 'tmp-tus');
    const store = new FileStore({ directory });
    const uploads = {
      abandoned: { id: 'a'.repeat(32), size: 100, offset: 0, age: 25 * HOUR_MS },
      fresh: { id: 'b'.repeat(32), size: 100, offset: 0, age: HOUR_MS },
      finished: { id: 'c'.repeat(32), size: 0, offset: 0, age: 25 * HOUR_MS },
    };
    for (const upload of Object.values(uploads)) {
      await store.create(
        new Upload({
          id: upload.id,
          size: upload.size,
          offset: upload.offset,
          creation_date: iso(-upload.age),
        }),
      );
    }
    await sweep('sweep_abandoned_uploads');
    expect(existsSync(join(directory, uploads.abandoned.id))).toBe(false);
    expect(existsSync(join(directory, `${uploads.abandoned.id}.json`))).toBe(false);
    expect(existsSync(join(directory, uploads.fresh.id))).toBe(true);
    expect(existsSync(join(directory, `${uploads.fresh.id}.json`))).toBe(true);
    expect(existsSync(join(directory, uploads.finished.id))).toBe(true);
  });

  it("fold_slots folds the counts' spare slot rows into slot 0 (PostgreSQL; one slot on SQLite)", async () => {
    const account = (await server.createAccount()).account_id;
    // Three intakes sent, counted in two slots on PostgreSQL, in the one on SQLite.
    const slots =
      database === 'postgres'
        ? [
            [0, 2],
            [5, 1],
          ]
        : [[0, 3]];
    for (const [slot, n] of slots) {
      await sql`insert into intake_counts (account_id, livemode, status, slot, n)
        values (${account}, 1, 'sent', ${slot}, ${n})`.execute(db());
    }
    await sweep('fold_slots');
    const rows = await db()
      .selectFrom('intake_counts')
      .select(['slot', 'n'])
      .where('account_id', '=', account)
      .execute();
    expect(rows.map((row) => [row.slot, Number(row.n)])).toEqual([[0, 3]]);
  });
});
