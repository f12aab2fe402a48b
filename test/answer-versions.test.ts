import { sql, type Kysely, type RawBuilder } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import {
  ANSWER_BLIND_TABLES,
  ANSWER_TABLES as FIRST_ANSWER_TABLES,
  UNWATCHED_COLUMNS,
} from '../src/db/migrations/0039_answer_versions.js';
import { COUNT_ANSWER_TABLES } from '../src/db/migrations/0040_intake_counts.js';
import { POSTGRES_ANSWER_TABLES } from '../src/db/migrations/0042_answer_versions_postgres.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import {
  fromAnotherConnection,
  nextTurn,
  openTestDatabase,
  startTestServer,
  type TestServer,
} from './helpers/server.js';
import { recordStatements } from './helpers/statements.js';

/**
 * Answers kept per account: an account's kept answers outlive commits that change none of its rows a
 * kept answer reads (another account's writes, its own jobs), and no others. The account versions are
 * kept by triggers (migration 0039 on SQLite, 0042 on PostgreSQL); these tests hold the kept reads to the
 * tables that have them, and every table of the schema to a choice.
 */

/** Every table under the account versions: those of migration 0039 and the intakes' counts since. */
const ANSWER_TABLES: Readonly<Record<string, string>> = { ...FIRST_ANSWER_TABLES, ...COUNT_ANSWER_TABLES };

/** The tables a statement names after FROM or JOIN. */
function tablesRead(statements: readonly { sql: string }[]): Set<string> {
  const tables = new Set<string>();
  for (const { sql: text } of statements) {
    for (const [, table] of text.matchAll(/\b(?:from|join)\s+"?(\w+)"?/gi)) if (table) tables.add(table);
  }
  return tables;
}

/**
 * The changes both databases' triggers count alike, from the versions `[first, other]` of the accounts
 * `one` (which holds suppressions) and `two`: an update, a move to the other account, a delete, a key's
 * use (nothing), its revocation, a blind table's row (nothing).
 */
async function expectMovesAlike(
  kysely: Kysely<Database>,
  { one, two }: { one: string; two: string },
  versions: () => Promise<number[]>,
  [first, other]: [number, number],
): Promise<void> {
  const at = new Date().toISOString();
  await sql`update suppressions set reason = 'complained' where account_id = ${one}`.execute(kysely);
  expect(await versions()).toEqual([first + 1, other]);
  // A row moved to another account changes both accounts' answers.
  await sql`update suppressions set account_id = ${two} where account_id = ${one}`.execute(kysely);
  expect(await versions()).toEqual([first + 2, other + 1]);
  await sql`delete from suppressions where account_id = ${two}`.execute(kysely);
  expect(await versions()).toEqual([first + 2, other + 2]);
  // When a key was last used changes no answer; its revocation does.
  await sql`update api_keys set last_used_at = ${at} where account_id = ${one}`.execute(kysely);
  expect(await versions()).toEqual([first + 2, other + 2]);
  await sql`update api_keys set revoked_at = ${at} where account_id = ${one}`.execute(kysely);
  const [revoked = 0] = await versions();
  expect(revoked).toBeGreaterThan(first + 2);
  // A blind table's rows change no version.
  await sql`insert into idempotency_keys (api_key_id, idem_key, account_id, livemode, request_hash, resource_type, resource_id, created_at)
      select id, 'k', account_id, 1, 'h', 'intake', null, ${at} from api_keys where account_id = ${one} limit 1`.execute(
    kysely,
  );
  expect(await versions()).toEqual([revoked, other + 2]);
}

describe('the account versions of the schema (SQLite)', () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;

  beforeAll(async () => {
    database = await openTestDatabase('sqlite');
    db = database.db;
  });

  afterAll(async () => {
    await database.close();
  });

  const all = <R>(query: RawBuilder<R>) => query.execute(db.kysely).then((result) => result.rows);

  it("puts every table that holds an account's rows either under versions or among the blind ones", async () => {
    const tables = await all<{ name: string }>(
      sql`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`,
    );
    const unplaced: string[] = [];
    for (const { name } of tables) {
      const columns = await all<{ name: string }>(sql`select name from pragma_table_info(${name})`);
      const holdsAccounts =
        name === 'accounts' ||
        (name !== 'answer_versions' && columns.some((column) => column.name === 'account_id'));
      const placed = name in ANSWER_TABLES || ANSWER_BLIND_TABLES.includes(name);
      if (holdsAccounts && !placed) unplaced.push(name);
    }
    expect(unplaced).toEqual([]);
    expect(Object.keys(ANSWER_TABLES).filter((name) => ANSWER_BLIND_TABLES.includes(name))).toEqual([]);
  });

  it('has an insert, update and delete trigger on every versioned table, naming its account column', async () => {
    const triggers = await all<{ name: string; tbl_name: string; sql: string }>(
      sql`select name, tbl_name, sql from sqlite_master where type = 'trigger'`,
    );
    for (const [table, column] of Object.entries(ANSWER_TABLES)) {
      for (const event of ['insert', 'update', 'delete']) {
        const trigger = triggers.find((t) => t.name === `${table}_answers_${event}`);
        expect(trigger, `${table} ${event}`).toMatchObject({ tbl_name: table });
        const unwatched = event === 'update' ? (UNWATCHED_COLUMNS[table] ?? []) : [];
        if (unwatched.length === 0) expect(trigger?.sql).toContain(`after ${event} on "${table}"`);
        else {
          // Every column but the unwatched ones, those added since the trigger was made included.
          const columns = await all<{ name: string }>(sql`select name from pragma_table_info(${table})`);
          const named = /after update of (.*) on "/.exec(trigger?.sql ?? '')?.[1]?.split(', ');
          const watched = columns.map((c) => c.name).filter((name) => !unwatched.includes(name));
          expect(named?.sort()).toEqual(watched.sort());
        }
        expect(trigger?.sql).toContain(`${event === 'delete' ? 'old' : 'new'}.${column}`);
      }
    }
  });

  it("moves an account's version on every insert, update and delete of its rows, and no other's", async () => {
    const at = new Date().toISOString();
    const one = await createAccount(db.kysely, { email: 'one@example.com', plan: 'agency' }, at);
    const two = await createAccount(db.kysely, { email: 'two@example.com', plan: 'agency' }, at);
    await nextTurn();
    const versionOf = (account: string): number => {
      const version = db.answerVersion?.(account);
      if (version === undefined) throw new Error('SQLite answers an account version outside transactions');
      return version;
    };
    const versions = async (): Promise<[number, number]> => {
      await nextTurn();
      return [versionOf(one.account_id), versionOf(two.account_id)];
    };
    const suppression = (account: string, address: string) =>
      sql`insert into suppressions (account_id, livemode, address, reason, message_id, created_at)
          values (${account}, 1, ${address}, 'bounced', null, ${at})`.execute(db.kysely);

    const [first, other] = await versions();
    expect(first).toBeGreaterThan(0);
    await suppression(one.account_id, 'a@example.com');
    expect(await versions()).toEqual([first + 1, other]);
    await expectMovesAlike(db.kysely, { one: one.account_id, two: two.account_id }, versions, [
      first + 1,
      other,
    ]);
  });
});

// PostgreSQL only where it runs, so that nothing is skipped.
if (DATABASES.includes('postgres'))
  describe('the account versions of the schema (PostgreSQL)', () => {
    let database: Awaited<ReturnType<typeof openTestDatabase>>;
    let db: Db;

    beforeAll(async () => {
      database = await openTestDatabase('postgres');
      db = database.db;
    });

    afterAll(async () => {
      await database.close();
    });

    const all = <R>(query: RawBuilder<R>) => query.execute(db.kysely).then((result) => result.rows);

    it("puts every table that holds an account's rows either under versions or among the blind ones", async () => {
      const columns = await all<{ table_name: string; column_name: string }>(
        sql`select table_name, column_name from information_schema.columns where table_schema = current_schema()`,
      );
      const holdsAccounts = new Set(
        columns
          .filter((c) => c.column_name === 'account_id' && c.table_name !== 'answer_versions')
          .map((c) => c.table_name),
      );
      holdsAccounts.add('accounts');
      const unplaced = [...holdsAccounts].filter(
        (name) => !(name in ANSWER_TABLES) && !ANSWER_BLIND_TABLES.includes(name),
      );
      expect(unplaced).toEqual([]);
    });

    it('has an insert, update and delete trigger on every versioned table, once a statement but where columns are unwatched', async () => {
      const triggers = await all<{ table: string; name: string; definition: string }>(
        sql`select c.relname as table, t.tgname as name, pg_get_triggerdef(t.oid) as definition
            from pg_trigger t join pg_class c on c.oid = t.tgrelid
            join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = current_schema() and not t.tgisinternal`,
      );
      // The intakes' counts change only with the intakes (and in the slots' fold): none there.
      expect(triggers.filter((t) => t.table === 'intake_counts' && t.name.includes('_answers_'))).toEqual([]);
      for (const table of Object.keys(POSTGRES_ANSWER_TABLES)) {
        for (const event of ['insert', 'update', 'delete']) {
          const trigger = triggers.find((t) => t.table === table && t.name === `${table}_answers_${event}`);
          expect(trigger, `${table} ${event}`).toBeDefined();
          const unwatched = event === 'update' ? (UNWATCHED_COLUMNS[table] ?? []) : [];
          if (unwatched.length === 0) {
            expect(trigger?.definition, `${table} ${event}`).toContain(`AFTER ${event.toUpperCase()} ON`);
            expect(trigger?.definition, `${table} ${event}`).toContain('FOR EACH STATEMENT');
            continue;
          }
          // Every column but the unwatched ones: the rows compared less those, so none is named.
          expect(trigger?.definition, `${table} ${event}`).toContain('FOR EACH ROW WHEN');
          for (const name of unwatched) expect(trigger?.definition).toContain(`'${name}'::text`);
        }
      }
    });

    it("moves an account's version once a transaction that changes its rows, and no other's", async () => {
      const at = new Date().toISOString();
      const one = await createAccount(db.kysely, { email: 'one@example.com', plan: 'agency' }, at);
      const two = await createAccount(db.kysely, { email: 'two@example.com', plan: 'agency' }, at);
      const versions = async () => {
        const read = async (account: string) => {
          const version = await db.readAnswerVersion?.(account);
          if (version === undefined) throw new Error('PostgreSQL answers an account version once migrated');
          return version;
        };
        return [await read(one.account_id), await read(two.account_id)];
      };
      const [first = 0, other = 0] = await versions();
      expect(first).toBeGreaterThan(0);
      // Two rows of one account in one statement: one more.
      await sql`insert into suppressions (account_id, livemode, address, reason, message_id, created_at)
          values (${one.account_id}, 1, 'a@example.com', 'bounced', null, ${at}),
                 (${one.account_id}, 1, 'b@example.com', 'bounced', null, ${at})`.execute(db.kysely);
      expect(await versions()).toEqual([first + 1, other]);
      // Several statements of one transaction: one more.
      await db.kysely.transaction().execute(async (trx) => {
        await sql`update suppressions set reason = 'unsubscribed' where account_id = ${one.account_id}`.execute(
          trx,
        );
        await sql`delete from suppressions where address = 'b@example.com'`.execute(trx);
      });
      expect(await versions()).toEqual([first + 2, other]);
      // A statement that changes no row changes no answer.
      await sql`delete from suppressions where account_id = ${two.account_id}`.execute(db.kysely);
      expect(await versions()).toEqual([first + 2, other]);
      await expectMovesAlike(db.kysely, { one: one.account_id, two: two.account_id }, versions, [
        first + 2,
        other,
      ]);
    });
  });

/** The tables the key's lookup reads on every request where it is not kept (PostgreSQL). */
const KEY_TABLES = ['api_keys', 'accounts', 'account_users'];

interface StatusBody {
  items: { key: string; label?: string; status: string }[];
}

describe.each(DATABASES)(
  'answers kept per account, past commits that change nothing of it, on %s',
  (database) => {
    let server: TestServer;
    let api: Client;
    let otherApi: Client;
    let intakeId: string;

    beforeAll(async () => {
      // No worker: its claims and jobs would be counted among a read's statements.
      server = await startTestServer(database, {}, { runWorker: false });
      api = client(server.url, (await server.createAccount()).live_key);
      otherApi = client(server.url, (await server.createAccount()).live_key);
      const created = await api.post<{ intake_id: string }>('/v1/intakes', {
        project_name: 'Versions',
        client: { email: 'client@example.com' },
        items: [{ key: 'about', label: 'About you', type: 'longtext' }],
        send: true,
      });
      expect(created.status, created.text).toBe(201);
      intakeId = created.body.intake_id;
    });

    afterAll(async () => {
      await server.stop();
    });

    /**
     * What a kept answer costs: the account's version. On PostgreSQL the key is read too (its one
     * statement is not kept there: checking it against a version would cost as much).
     */
    const keptCost = (read: Set<string>) =>
      [...read].filter((table) => database === 'sqlite' || !KEY_TABLES.includes(table));

    const reads = () => [
      '/v1/account',
      '/v1/intakes',
      `/v1/intakes/${intakeId}`,
      `/v1/intakes/${intakeId}/status`,
    ];

    /** The tables read while `action` runs. */
    async function tablesReadDuring(action: () => Promise<unknown>): Promise<Set<string>> {
      const recording = recordStatements();
      try {
        await action();
      } finally {
        recording.stop();
      }
      return tablesRead(recording.statements);
    }

    it('reads only versioned tables to build a kept answer', async () => {
      // Cold: a commit of this account's before each read.
      for (const path of reads()) {
        await fromAnotherConnection(
          server,
          sql`update intakes set project_name = project_name where id = ${intakeId}`,
        );
        const read = await tablesReadDuring(async () => expect((await api.get(path)).status).toBe(200));
        expect(read.has('intakes') || path === '/v1/account', path).toBe(true);
        const unversioned = [...read].filter(
          (table) => !(table in ANSWER_TABLES) && table !== 'answer_versions',
        );
        expect(unversioned, path).toEqual([]);
      }
    });

    it("answers from memory after another account's commit, reading none of the answer's tables", async () => {
      const before = await Promise.all(reads().map((path) => api.get(path)));
      const created = await otherApi.post('/v1/intakes', {
        project_name: 'Elsewhere',
        client: { email: 'someone@example.com' },
        items: [{ key: 'logo', label: 'Logo', type: 'file' }],
      });
      expect(created.status, created.text).toBe(201);
      for (const [index, path] of reads().entries()) {
        const read = await tablesReadDuring(async () => {
          const answer = await api.get(path);
          expect(answer.text, path).toBe(before[index]?.text);
          expect(answer.headers.get('etag'), path).toBe(before[index]?.headers.get('etag'));
        });
        // The account's version is read (the commit was seen); none of the answer's tables are.
        expect(keptCost(read), path).toEqual(['answer_versions']);
      }
    });

    // PostgreSQL only, defined only there so that nothing is skipped.
    if (database === 'postgres')
      it('answers a kept answer after one statement, the key with its account version', async () => {
        for (const path of reads()) await api.get(path);
        // Polled: each answer was kept by the read before, and nothing of the account's changed since.
        for (const path of reads()) {
          const recording = recordStatements();
          try {
            expect((await api.get(path)).status, path).toBe(200);
          } finally {
            recording.stop();
          }
          expect(recording.statements.length, path).toBe(1);
          expect(recording.statements[0]?.sql, path).toMatch(/from "?answer_versions"?/);
        }
      });

    it("answers from memory after a commit to the account's jobs alone, from another process", async () => {
      const before = await api.get(`/v1/intakes/${intakeId}/status`);
      const account = (await api.get<{ id: string }>('/v1/account')).body.id;
      // A job of the account's, due in a thousand years: written and committed, never run here.
      await fromAnotherConnection(
        server,
        sql`insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, created_at)
          values ('job_answer_versions', ${account}, 1, 'sweep_expired_auth', ${intakeId}, '{}',
                  ${Date.now() + 1000 * 365 * 86_400_000}, ${new Date().toISOString()})`,
      );
      const read = await tablesReadDuring(async () => {
        const after = await api.get(`/v1/intakes/${intakeId}/status`);
        expect(after.text).toBe(before.text);
      });
      // The account's version was read: the commit was seen. Nothing else of the answer's was.
      expect(keptCost(read)).toEqual(['answer_versions']);
    });

    it('refuses a kept key revoked by another process at its very next request', async () => {
      const made = await api.post<{ id: string; key: string }>('/v1/keys', {
        name: 'soon revoked',
        mode: 'live',
        scopes: ['intakes:read'],
      });
      expect(made.status, made.text).toBe(201);
      const revocable = client(server.url, made.body.key);
      expect((await revocable.get(`/v1/intakes/${intakeId}/status`)).status).toBe(200);
      // Another account's commit leaves the key kept: its next request reads no key.
      await otherApi.post('/v1/intakes', {
        project_name: 'Meanwhile',
        client: { email: 'meanwhile@example.com' },
        items: [{ key: 'logo', label: 'Logo', type: 'file' }],
      });
      const kept = await tablesReadDuring(async () => {
        expect((await revocable.get(`/v1/intakes/${intakeId}/status`)).status).toBe(200);
      });
      expect(kept.has('api_keys')).toBe(database === 'postgres');
      await fromAnotherConnection(
        server,
        sql`update api_keys set revoked_at = ${new Date().toISOString()} where id = ${made.body.id}`,
      );
      expect((await revocable.get(`/v1/intakes/${intakeId}/status`)).status).toBe(401);
    });

    it("shows a change of the account's rows made by another process in the very next read", async () => {
      for (const path of reads().slice(1)) await api.get(path);
      await fromAnotherConnection(
        server,
        sql`update intake_items set definition = replace(definition, '"About you"', '"About your bakery"')
          where intake_id = ${intakeId} and key = 'about'`,
      );
      const intake = await api.get<StatusBody>(`/v1/intakes/${intakeId}`);
      expect(intake.body.items.map((item) => item.label)).toEqual(['About your bakery']);
      const status = await api.get<StatusBody>(`/v1/intakes/${intakeId}/status`);
      expect(status.body.items.map((item) => item.label)).toEqual(['About your bakery']);
    });
  },
);
