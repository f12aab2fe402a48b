/**
 * The intakes' list filtered by status, client, folder or review (`GET /v1/intakes?…`, and the
 * dashboard's list of one status, awaiting review first): each page is read off an index in the list's
 * order (migration 0050), never sorted from every intake of the status, client or folder; the intakes
 * of a status awaiting review off a partial index of them; and the total of those not awaiting review
 * is the kept count less those awaiting, right with and without a status.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listIntakes } from '../src/modules/intakes/intakes.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { planOf, wholeReads } from './helpers/plans.js';
import { startTestServer, systemWorld, type TestServer } from './helpers/server.js';
import { recordStatements, type Statement } from './helpers/statements.js';

interface Listed {
  total: number;
  intakes: { intake_id: string; status: string; awaiting_review: number }[];
}

describe.each(DATABASES)("the intakes' list by status, client, folder and review, on %s", (database) => {
  let server: TestServer;
  let api: Client;
  let accountId: string;
  let folderId: string;
  /** Intakes by what they are: sent, in progress (one answer awaiting review), completed. */
  const made = { sent: [] as string[], waiting: [] as string[], completed: [] as string[] };

  const db = () => server.server.services.db.kysely;

  async function create(email: string, folder?: string): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Filtered',
      client: { email },
      ...(folder === undefined ? {} : { folder_id: folder }),
      items: [
        { key: 'about', label: 'About you', type: 'text' },
        { key: 'site', label: 'Website', type: 'url' },
      ],
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  async function simulate(id: string, body: object): Promise<void> {
    const simulated = await api.post(`/v1/test_helpers/intakes/${id}/simulate`, body);
    expect(simulated.status, simulated.text).toBe(200);
  }

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.test_key);
    accountId = account.account_id;
    const folder = await api.post<{ id: string }>('/v1/folders', { name: 'Filed' });
    expect(folder.status, folder.text).toBe(201);
    folderId = folder.body.id;
    for (let i = 0; i < 3; i++) made.sent.push(await create(`sent${i}@example.com`, folderId));
    for (let i = 0; i < 2; i++) {
      const id = await create('waiting@example.com');
      await simulate(id, { action: 'submit', items: ['about'] });
      made.waiting.push(id);
    }
    const done = await create('done@example.com');
    await simulate(done, { action: 'submit', items: ['about', 'site'] });
    const approved = await api.post(`/v1/intakes/${done}/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    made.completed.push(done);
    // Another account's intakes, and this account's in live mode, are in no list below.
    const other = await server.createAccount({ plan: 'agency' });
    const elsewhere = await client(server.url, other.test_key).post('/v1/intakes', {
      project_name: 'Elsewhere',
      client: { email: 'waiting@example.com' },
      items: [{ key: 'about', label: 'About you', type: 'text' }],
    });
    expect(elsewhere.status, elsewhere.text).toBe(201);
  });
  afterAll(async () => {
    await server.stop();
  });

  /**
   * The list as the API answers it, computed afresh: a commit to the account first (its name set to
   * itself) moves its version, so no answer kept from an earlier read of the same URL is given.
   */
  async function listed(query: string): Promise<Listed> {
    await sql`update accounts set name = name where id = ${accountId}`.execute(db());
    const response = await api.get<Listed>(`/v1/intakes?${query}&limit=100`);
    expect(response.status, response.text).toBe(200);
    return response.body;
  }

  const ids = (list: Listed) => list.intakes.map((i) => i.intake_id).sort();
  const sorted = (...lists: string[][]) => lists.flat().sort();

  it('answers each filter with its intakes and its total', async () => {
    const statuses = Object.fromEntries(
      (await listed('status=in_progress')).intakes.map((i) => [i.intake_id, i.status]),
    );
    expect(Object.keys(statuses).sort()).toEqual(sorted(made.waiting));
    const notWaiting = await listed('awaiting_review=false');
    expect(ids(notWaiting)).toEqual(sorted(made.sent, made.completed));
    expect(notWaiting.total).toBe(made.sent.length + made.completed.length);
    const waiting = await listed('awaiting_review=true');
    expect(ids(waiting)).toEqual(sorted(made.waiting));
    expect(waiting.total).toBe(made.waiting.length);
    const sentNotWaiting = await listed('status=sent&awaiting_review=false');
    expect(ids(sentNotWaiting)).toEqual(sorted(made.sent));
    expect(sentNotWaiting.total).toBe(made.sent.length);
    const inProgressNotWaiting = await listed('status=in_progress&awaiting_review=false');
    expect(inProgressNotWaiting).toMatchObject({ total: 0, intakes: [] });
    const inProgressWaiting = await listed('status=in_progress&awaiting_review=true');
    expect(ids(inProgressWaiting)).toEqual(sorted(made.waiting));
    expect(inProgressWaiting.total).toBe(made.waiting.length);
    const byClient = await listed('client_email=waiting@example.com');
    expect(ids(byClient)).toEqual(sorted(made.waiting));
    expect(byClient.total).toBe(made.waiting.length);
    const byFolder = await listed(`folder_id=${folderId}`);
    expect(ids(byFolder)).toEqual(sorted(made.sent));
    expect(byFolder.total).toBe(made.sent.length);
  });

  it('keeps the total of those not awaiting review as answers arrive and are approved', async () => {
    const before = await listed('awaiting_review=false');
    const id = made.sent[0] ?? '';
    await simulate(id, { action: 'submit', items: ['about'] });
    const submitted = await listed('awaiting_review=false');
    expect(submitted.total).toBe(before.total - 1);
    expect(ids(submitted)).not.toContain(id);
    expect((await listed('status=in_progress&awaiting_review=false')).total).toBe(0);
    const approved = await api.post(`/v1/intakes/${id}/items/about/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    const after = await listed('awaiting_review=false');
    expect(after.total).toBe(before.total);
    expect(ids(after)).toContain(id);
  });

  /** The statements of the intakes' table that `run` sent, each with its plan's steps. */
  async function plannedReads(run: () => Promise<unknown>): Promise<{ read: Statement; plan: string }[]> {
    const recorder = recordStatements();
    try {
      await run();
    } finally {
      recorder.stop();
    }
    const reads = recorder.statements.filter((s) => /\bfrom "intakes"/.test(s.sql));
    return Promise.all(
      reads.map(async (read) => ({ read, plan: (await planOf(db(), database, read)).join('\n') })),
    );
  }

  /** Whether a plan sorts rows (SQLite's temporary B-tree for ORDER BY, PostgreSQL's Sort node). */
  const sorts = (plan: string) => /USE TEMP B-TREE FOR ORDER BY|\bSort\b/.test(plan);

  it.each([
    ['status=completed', 'intakes_account_status_created_id'],
    ['client_email=waiting@example.com', 'intakes_account_client_created_id'],
    ['status=in_progress&awaiting_review=true', 'intakes_awaiting_review_status_created_id'],
  ])('reads the page of ?%s off %s, in the list order', async (query, index) => {
    const reads = await plannedReads(() => listed(query));
    const pages = reads.filter(({ read }) => /\border by\b/.test(read.sql));
    expect(pages).toHaveLength(1);
    for (const { read, plan } of pages) {
      expect(plan, read.sql).toContain(index);
      expect(sorts(plan), plan).toBe(false);
      expect(await wholeReads(db(), database, plan.split('\n'), ['intakes']), plan).toEqual([]);
    }
  });

  it("reads a folder's page off its index, in the list order", async () => {
    const reads = await plannedReads(() => listed(`folder_id=${folderId}`));
    const [page] = reads.filter(({ read }) => /\border by\b/.test(read.sql));
    expect(page?.plan, page?.read.sql).toContain('intakes_account_folder_created_id');
    expect(sorts(page?.plan ?? ''), page?.plan).toBe(false);
    expect(await wholeReads(db(), database, page?.plan.split('\n') ?? [], ['intakes']), page?.plan).toEqual(
      [],
    );
  });

  it('counts those not awaiting review by the partial index of those awaiting, not the whole status', async () => {
    for (const query of ['awaiting_review=false', 'status=sent&awaiting_review=false']) {
      const reads = await plannedReads(() => listed(query));
      const counts = reads.filter(({ read }) => /\bcount\(\*\)/.test(read.sql));
      expect(counts, query).toHaveLength(1);
      for (const { read, plan } of counts) {
        expect(read.sql).toMatch(/"awaiting_review" > 0\b/);
        expect(plan, read.sql).toMatch(/intakes_awaiting_review_(status_)?created_id/);
        expect(await wholeReads(db(), database, plan.split('\n'), ['intakes']), plan).toEqual([]);
      }
    }
  });

  it("reads the dashboard's list of one status, awaiting review first, without a sort", async () => {
    const world = systemWorld(server, accountId, false);
    let page: Awaited<ReturnType<typeof listIntakes>> | undefined;
    const reads = await plannedReads(async () => {
      page = await listIntakes(db(), world, {
        status: 'in_progress',
        reviewFirst: true,
        limit: 25,
        offset: 0,
      });
    });
    const inProgress = await listed('status=in_progress');
    expect(page?.rows.map((r) => r.id).sort()).toEqual(ids(inProgress));
    expect(page?.total).toBe(inProgress.total);
    // Those awaiting review first.
    const waitingFirst = page?.rows.slice(0, made.waiting.length).map((r) => r.id);
    expect(waitingFirst?.sort()).toEqual(sorted(made.waiting));
    expect(reads.length).toBeGreaterThanOrEqual(2);
    for (const { read, plan } of reads) {
      expect(plan, read.sql).toMatch(/intakes_(awaiting_review_status|account_status)_created_id/);
      expect(sorts(plan), plan).toBe(false);
      expect(await wholeReads(db(), database, plan.split('\n'), ['intakes']), plan).toEqual([]);
    }
  });
});
