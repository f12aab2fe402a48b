import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES, TEST_POSTGRES_URL } from './helpers/env.js';
import { startFaultProxy, untilPasses, type FaultProxy } from './helpers/fault-proxy.js';
import { client, type Client } from './helpers/http.js';
import { png } from './helpers/images.js';
import { eventually } from './helpers/receivers.js';
import { startSmtpServer } from './helpers/mail.js';
import { startLocalS3, type LocalS3 } from './helpers/s3.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Faults of real dependencies, injected with a TCP proxy on loopback that cuts every connection and
 * refuses new ones: PostgreSQL going away and coming back, object storage failing during uploads,
 * SMTP down while reminders are due. Nothing may be half-written, lost or sent twice.
 */

const ITEMS = [
  { key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png'] } },
  { key: 'about', label: 'About', type: 'longtext' },
];

const intakeBody = (project: string) => ({
  project_name: project,
  client: { email: 'client@example.com' },
  items: ITEMS,
});

type SmtpServer = Awaited<ReturnType<typeof startSmtpServer>>;

/** An intake with no scheduled series, its invitation delivered: only a manual reminder can be due. */
async function invitedIntake(server: TestServer, api: Client, smtp: SmtpServer, to: string): Promise<string> {
  const created = await api.post<{ intake_id: string }>('/v1/intakes', {
    ...intakeBody('reminders'),
    client: { email: to },
    chase_schedule: 'off',
  });
  expect(created.status).toBe(201);
  await server.server.worker.runDue();
  expect(await smtp.waitFor(to, 1)).toHaveLength(1);
  return created.body.intake_id;
}

/** The intake's manual reminders. */
function manualReminders(server: TestServer, intakeId: string) {
  return server.server.services.db.kysely
    .selectFrom('chases')
    .select(['id', 'status', 'send_attempts'])
    .where('intake_id', '=', intakeId)
    .where('trigger', '=', 'manual')
    .execute();
}

describe.runIf(DATABASES.includes('postgres'))('PostgreSQL going away and coming back', () => {
  const schema = `t_faults_${process.pid}_${Date.now().toString(36)}`;
  let proxy: FaultProxy;
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    const target = new URL(TEST_POSTGRES_URL);
    proxy = await startFaultProxy(target.hostname, Number(target.port || 5432));
    const through = new URL(TEST_POSTGRES_URL);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    through.searchParams.set('schema', schema);
    // The database kind only picks where the helper keeps its own schema: this one goes through the proxy.
    server = await startTestServer('sqlite', { DATABASE_URL: through.toString() });
    const account = await server.createAccount({ plan: 'agency', rateLimitPerHour: 100_000 });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await proxy?.restore();
    await server?.stop();
    await proxy?.close();
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    await admin.query(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  });

  async function countIntakes(project: string): Promise<number> {
    const rows = await server.server.services.db.kysely
      .selectFrom('intakes')
      .select('id')
      .where('project_name', '=', project)
      .execute();
    return rows.length;
  }

  it('answers 503 on readiness and 500 with a request id while down, then recovers with nothing half-written', async () => {
    expect((await api.post('/v1/intakes', intakeBody('before'))).status).toBe(201);
    proxy.cut();

    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: { database: string } }).checks.database).toBe('down');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    for (const response of [
      await api.get('/v1/intakes'),
      await api.post('/v1/intakes', intakeBody('during outage')),
      await api.get('/v1/account'),
    ]) {
      expectError(response, 500, 'internal_error');
    }

    await proxy.restore();
    await untilPasses(async () => {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    });
    expect((await api.get('/v1/intakes')).status).toBe(200);
    expect(await countIntakes('during outage')).toBe(0);
    expect(await countIntakes('before')).toBe(1);
  });

  it('leaves every intake whole when the database drops in the middle of a burst of creations', async () => {
    const project = 'burst';
    const answers: Promise<{ status: number; id?: string }>[] = [];
    for (let i = 0; i < 24; i++) {
      answers.push(
        api
          .post<{ intake_id: string }>('/v1/intakes', intakeBody(project))
          .then((r) => ({ status: r.status, id: r.body.intake_id })),
      );
      if (i === 8) proxy.cut();
      if (i === 16) await proxy.restore();
    }
    const settled = await Promise.all(answers);
    await proxy.restore();
    for (const answer of settled) expect([201, 500]).toContain(answer.status);
    await untilPasses(async () => {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    });
    const db = server.server.services.db.kysely;
    const intakes = await db.selectFrom('intakes').select('id').where('project_name', '=', project).execute();
    // Every created intake answered 201 exists; every intake that exists has all its items and its events.
    for (const answer of settled.filter((a) => a.status === 201)) {
      expect(intakes.map((row) => row.id)).toContain(answer.id);
    }
    for (const { id } of intakes) {
      const items = await db.selectFrom('intake_items').select('key').where('intake_id', '=', id).execute();
      expect(items.map((item) => item.key).sort()).toEqual(['about', 'logo']);
      const events = await db.selectFrom('events').select('id').where('intake_id', '=', id).execute();
      expect(events.length).toBeGreaterThan(0);
    }
    console.info(
      `db burst: ${settled.filter((a) => a.status === 201).length} created, ${settled.filter((a) => a.status === 500).length} failed cleanly, ${proxy.faults} connections cut`,
    );
  });
});

describe.each(DATABASES)('object storage failing during uploads on %s', (database) => {
  let s3: LocalS3;
  let proxy: FaultProxy;
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    s3 = await startLocalS3();
    const endpoint = new URL(s3.endpoint);
    proxy = await startFaultProxy(endpoint.hostname, Number(endpoint.port));
    const through = s3.storageUrl.replace(
      encodeURIComponent(s3.endpoint),
      encodeURIComponent(`http://127.0.0.1:${proxy.port}`),
    );
    server = await startTestServer(database, { STORAGE_URL: through });
    const account = await server.createAccount({ plan: 'agency', rateLimitPerHour: 100_000 });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await proxy?.restore();
    await server?.stop();
    await proxy?.close();
    await s3?.stop();
  });

  it('fails the upload cleanly and records no file while storage is down; works again after', async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', intakeBody('storage'));
    const id = created.body.intake_id;
    const image = await png(64, 64);
    const upload = () =>
      fetch(`${server.url}/portal/api/${id}/items/logo/files`, {
        method: 'POST',
        headers: { 'content-type': 'image/png', 'x-filename': 'logo.png' },
        body: image,
      });
    const files = () =>
      server.server.services.db.kysely
        .selectFrom('item_files')
        .select('id')
        .where('intake_id', '=', id)
        .execute();

    proxy.cut();
    for (let i = 0; i < 3; i++) {
      const failed = await upload();
      const body = (await failed.json()) as Record<string, unknown>;
      expect(failed.status, JSON.stringify(body)).toBeGreaterThanOrEqual(500);
      expect(body.request_id).toMatch(/^req_/);
    }
    expect(await files()).toEqual([]);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);

    await proxy.restore();
    const stored = await upload();
    expect(stored.status).toBe(201);
    expect(await files()).toHaveLength(1);
    // And the one file is really there to download.
    const results = await api.get<{ items: { key: string; value: { files: { url: string }[] } | null }[] }>(
      `/v1/intakes/${id}/results?include_pending=true`,
    );
    const submitted = await fetch(`${server.url}/portal/api/${id}/items/logo/submit`, { method: 'POST' });
    expect(submitted.status).toBe(200);
    expect(results.status).toBe(200);
  });
});

describe.each(DATABASES)('SMTP down while reminders are due on %s', (database) => {
  let smtp: SmtpServer;
  let proxy: FaultProxy;
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    proxy = await startFaultProxy('127.0.0.1', smtp.port);
    server = await startTestServer(database, {
      SMTP_URL: smtp.url.replace(`:${smtp.port}`, `:${proxy.port}`),
    });
    const account = await server.createAccount({ plan: 'agency', rateLimitPerHour: 100_000 });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await proxy?.restore();
    await server?.stop();
    await proxy?.close();
    await smtp?.close();
  });

  it('keeps the reminder while SMTP is down and sends it exactly once when it is back', async () => {
    const to = `fault-${database}@example.com`;
    const db = server.server.services.db.kysely;
    const worker = server.server.worker;
    const mailsTo = () => smtp.received.filter((mail) => mail.envelopeTo.includes(to)).length;

    // The invitation goes out while SMTP is up.
    const id = await invitedIntake(server, api, smtp, to);
    const reminder = () => manualReminders(server, id);

    // SMTP goes away; a reminder is due now.
    proxy.cut();
    expect((await api.post(`/v1/intakes/${id}/chase`, { channel: 'email' })).status).toBe(200);
    await worker.runDue();
    const waiting = await reminder();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.status).toBe('scheduled');
    expect(waiting[0]?.send_attempts).toBeGreaterThanOrEqual(1);
    expect(mailsTo()).toBe(1);

    // SMTP is back; the retry falls due (the backoff delay is moved, not waited for).
    await proxy.restore();
    const retriesDue = () =>
      db
        .updateTable('jobs')
        .set({ due_at: Date.now() - 1 })
        .where('kind', '=', 'dispatch_chase')
        .execute();
    await retriesDue();
    await worker.runDue();
    const delivered = await smtp.waitFor(to, 2);
    expect(delivered.map((mail) => mail.parsed.subject)).toHaveLength(2);
    // Nothing is sent twice, however often the worker looks again.
    await retriesDue();
    await worker.runDue();
    await worker.runDue();
    expect(mailsTo()).toBe(2);
    expect((await reminder()).map((chase) => chase.status)).toEqual(['sent']);
  });
});

describe.each(DATABASES)('the database failing while a reminder or an email is read, on %s', (database) => {
  let smtp: SmtpServer;
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer(database, { SMTP_URL: smtp.url });
    const account = await server.createAccount({ plan: 'agency', rateLimitPerHour: 100_000 });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
  });

  /**
   * Runs `work` while a table the sends read (and the requests here do not) is gone: a real error of
   * the database, as a dropped connection or a failed-over server gives.
   */
  async function whileFilesTableAway(work: () => Promise<void>): Promise<void> {
    const db = server.server.services.db.kysely;
    await db.schema.alterTable('item_files').renameTo('item_files_away').execute();
    try {
      await work();
    } finally {
      await db.schema.alterTable('item_files_away').renameTo('item_files').execute();
    }
  }

  /** Makes the jobs of a kind due now (the backoff delay is moved, not waited for). */
  async function dueNow(kind: string): Promise<void> {
    await server.server.services.db.kysely
      .updateTable('jobs')
      .set({ due_at: Date.now() - 1 })
      .where('kind', '=', kind)
      .execute();
  }

  it('retries a reminder whose reads failed before its send, and sends it exactly once', async () => {
    const to = `read-fault-${database}@example.com`;
    const db = server.server.services.db.kysely;
    const worker = server.server.worker;
    const mailsTo = () => smtp.received.filter((mail) => mail.envelopeTo.includes(to)).length;
    const id = await invitedIntake(server, api, smtp, to);
    const reminder = () => manualReminders(server, id);
    const dispatchJob = () =>
      db
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'dispatch_chase')
        .where('subject_id', 'like', `${id}/%`)
        .execute();

    // A reminder is asked for; its dispatch fails while it reads.
    let asked: Awaited<ReturnType<typeof api.post>> | undefined;
    await whileFilesTableAway(async () => {
      asked = await api.post(`/v1/intakes/${id}/chase`, { channel: 'email' });
    });
    // The answer says what a transient failure says: still scheduled.
    expect(asked?.status).toBe(200);
    expect(asked?.body).toMatchObject({ status: 'scheduled', sent_at: null });
    // Nothing was sent, and the job knows it: due again after the backoff, not given up.
    const [failed] = await dispatchJob();
    expect(failed).toMatchObject({ attempts: 1, unsent_attempts: 1, locked_until: null });
    expect(failed?.last_error).toMatch(/item_files/);
    expect((await reminder()).map((chase) => chase.status)).toEqual(['scheduled']);
    expect(mailsTo()).toBe(1);

    // The retry falls due and sends the reminder once.
    await dueNow('dispatch_chase');
    await worker.runDue();
    expect(await smtp.waitFor(to, 2)).toHaveLength(2);
    await worker.runDue();
    expect(mailsTo()).toBe(2);
    expect((await reminder()).map((chase) => chase.status)).toEqual(['sent']);
    expect(await dispatchJob()).toEqual([]);
  });
  it('retries an invitation email whose reads failed before its send, and sends it exactly once', async () => {
    const to = `invite-fault-${database}@example.com`;
    const db = server.server.services.db.kysely;
    const worker = server.server.worker;
    const invitation = (intakeId: string) =>
      db
        .selectFrom('messages')
        .select(['status', 'sent_at'])
        .where('intake_id', '=', intakeId)
        .where('template', '=', 'invitation')
        .executeTakeFirst();
    const deliveryJob = (intakeId: string) =>
      db
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'deliver_message')
        .where('subject_id', 'like', `${intakeId}/%`)
        .executeTakeFirst();

    // The intake is sent; its invitation's job fails while it reads (this process's worker may take
    // it first: either way it fails once).
    let id = '';
    await whileFilesTableAway(async () => {
      const created = await api.post<{ intake_id: string }>('/v1/intakes', {
        ...intakeBody('invitation fault'),
        client: { email: to },
        chase_schedule: 'off',
      });
      expect(created.status).toBe(201);
      id = created.body.intake_id;
      await worker.runDue();
      await eventually(async () => {
        const job = await deliveryJob(id);
        return job?.attempts === 1 && job.locked_until === null ? job : undefined;
      }, 'the invitation job to fail once');
    });
    const failed = await deliveryJob(id);
    expect(failed).toMatchObject({ attempts: 1, unsent_attempts: 1, locked_until: null });
    expect(failed?.last_error).toMatch(/item_files/);
    expect(await invitation(id)).toMatchObject({ status: 'pending', sent_at: null });
    expect(smtp.received.filter((mail) => mail.envelopeTo.includes(to))).toHaveLength(0);

    // The retry falls due and sends the invitation once.
    await dueNow('deliver_message');
    await worker.runDue();
    expect(await smtp.waitFor(to, 1)).toHaveLength(1);
    await worker.runDue();
    expect(smtp.received.filter((mail) => mail.envelopeTo.includes(to))).toHaveLength(1);
    expect((await invitation(id))?.status).toBe('sent');
    expect(await deliveryJob(id)).toBeUndefined();
  });
});
