import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_CONCURRENCY } from '../src/jobs/worker.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Upload } from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from './helpers/http.js';
import { startSmtpServer } from './helpers/mail.js';
import { runCli, startCliProcess, type CliProcess } from './helpers/processes.js';
import { eventually, startReceiver, type Receiver } from './helpers/receivers.js';

/**
 * Crash safety of the embedded default: one `serve` process on SQLite and local files, killed with
 * SIGKILL mid-upload, mid-burst of creations and mid-deliveries, then started again on the same
 * DATA_DIR. Whatever was acknowledged survives; whatever was cut off can be finished by retrying.
 */
const JOB_LEASE_MS = 2_000;

describe('crash safety on SQLite (one serve process, SIGKILL)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let hooks: Receiver;
  /** While true, the receiver takes deliveries and never answers (they are in flight at the kill). */
  let hanging = true;
  const answered = new Set<string>();
  let server: CliProcess | undefined;
  let key = '';

  const running = (): CliProcess => {
    if (!server) throw new Error('the server is not running');
    return server;
  };
  const start = async () => {
    server = await startCliProcess('serve', env);
    return server;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'intake-crash-'));
    smtp = await startSmtpServer();
    hooks = await startReceiver((_n, request, response) => {
      if (hanging) return 'hang';
      answered.add((JSON.parse(request.body) as { id: string }).id);
      response.writeHead(200).end('ok');
    });
    env = {
      DATA_DIR: dataDir,
      SMTP_URL: smtp.url,
      JOB_LEASE_MS: String(JOB_LEASE_MS),
      LOG_LEVEL: 'warn',
    };
    key = (
      JSON.parse(
        await runCli(
          ['accounts', 'create', '--email', 'crash@example.com', '--plan', 'agency', '--json'],
          env,
        ),
      ) as { live_key: string }
    ).live_key;
    await start();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await Promise.all([smtp?.close(), hooks?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function restart(): Promise<CliProcess> {
    await server?.kill();
    return start();
  }

  async function createIntake(url: string, items: unknown[], idempotencyKey = randomUUID()) {
    return client(url, key).post<{ intake_id: string }>(
      '/v1/intakes',
      // The body follows from the key: a retry sends the same request.
      { project_name: 'Crash', client: { email: `c-${idempotencyKey}@example.com` }, items },
      { headers: { 'idempotency-key': idempotencyKey } },
    );
  }

  it('resumes a tus upload cut off by SIGKILL, after the restart, with tus-js-client', async () => {
    const first = running();
    const created = await createIntake(first.url, [{ key: 'video', label: 'Video', type: 'file' }]);
    expect(created.status).toBe(201);
    const id = created.body.intake_id;
    const bytes = randomBytes(3 * 1024 * 1024 + 11);

    // The server dies while the upload runs: right after the first chunk was acknowledged.
    let uploadUrl: string | null = null;
    const failed = await new Promise<unknown>((resolve) => {
      const upload: Upload = new Upload(bytes, {
        endpoint: `${first.url}/portal/api/${id}/items/video/tus`,
        chunkSize: 512 * 1024,
        retryDelays: null,
        metadata: { filename: 'clip.bin', filetype: 'application/octet-stream' },
        onChunkComplete: () => {
          uploadUrl = upload.url;
          void first.kill();
        },
        onSuccess: () => resolve('finished before the kill'),
        onError: resolve,
      });
      upload.start();
    });
    expect(failed).toBeInstanceOf(Error);
    expect(uploadUrl).toBeTruthy();
    const path = new URL(uploadUrl ?? '').pathname;

    const second = await restart();
    const head = await fetch(second.url + path, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('upload-offset'))).toBeGreaterThanOrEqual(512 * 1024);
    const fileId = await new Promise<string | null>((resolve, reject) => {
      const upload = new Upload(bytes, {
        endpoint: `${second.url}/portal/api/${id}/items/video/tus`,
        uploadUrl: second.url + path,
        chunkSize: 512 * 1024,
        retryDelays: null,
        metadata: { filename: 'clip.bin', filetype: 'application/octet-stream' },
        onSuccess: ({ lastResponse }) => resolve(lastResponse.getHeader('X-File-Id') ?? null),
        onError: reject,
      });
      upload.start();
    });
    expect(fileId).toMatch(/^file_/);
    const db = new SQLite(join(dataDir, 'intake.sqlite'), { readonly: true });
    try {
      const rows = db.prepare('select size, sha256 from item_files where intake_id = ?').all(id) as {
        size: number;
        sha256: string;
      }[];
      expect(rows).toEqual([
        { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
      ]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('creates each intake once when a burst cut off by SIGKILL is retried with the same Idempotency-Keys', async () => {
    const burst = Array.from({ length: 24 }, () => randomUUID());
    const items = [{ key: 'about', label: 'About', type: 'text' }];
    const url = running().url;
    let answered = 0;
    // Fire all at once; kill the server as soon as a few have been answered.
    const first = await Promise.allSettled(
      burst.map(async (idempotencyKey) => {
        const response = await createIntake(url, items, idempotencyKey);
        if (++answered === 4) void running().kill();
        return response;
      }),
    );
    const acknowledged = new Map<string, string>();
    first.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled' && outcome.value.status === 201)
        acknowledged.set(burst[i] ?? '', outcome.value.body.intake_id);
    });
    expect(first.some((outcome) => outcome.status === 'rejected')).toBe(true);

    const second = await restart();
    const retried = await Promise.all(
      burst.map((idempotencyKey) => createIntake(second.url, items, idempotencyKey)),
    );
    const ids = new Set<string>();
    retried.forEach((response, i) => {
      expect([200, 201]).toContain(response.status);
      // What was acknowledged before the crash is what the retry finds.
      const before = acknowledged.get(burst[i] ?? '');
      if (before) {
        expect(response.status).toBe(200);
        expect(response.body.intake_id).toBe(before);
      }
      ids.add(response.body.intake_id);
    });
    expect(ids.size).toBe(burst.length);
    const db = new SQLite(join(dataDir, 'intake.sqlite'), { readonly: true });
    try {
      const rows = db.prepare("select count(*) as n from intakes where project_name = 'Crash'").get() as {
        n: number;
      };
      // One intake from the upload test, plus exactly one per key of the burst.
      expect(rows.n).toBe(1 + burst.length);
    } finally {
      db.close();
    }
  }, 60_000);

  it('loses no webhook delivery or email when SIGKILL comes mid-delivery', async () => {
    const url = running().url;
    const api = client(url, key);
    const hook = await api.post('/v1/webhooks', { url: hooks.url, events: ['intake.sent', 'chase.sent'] });
    expect(hook.status).toBe(201);
    hanging = true;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await createIntake(url, [{ key: 'about', label: 'About', type: 'text' }]);
      expect(created.status).toBe(201);
      ids.push(created.body.intake_id);
      expect((await api.post(`/v1/intakes/${created.body.intake_id}/chase`, {})).status).toBe(200);
    }
    // Deliveries are in flight (the receiver holds them) when the process dies.
    await hooks.waitFor(1, 10_000);
    const second = await restart();
    hanging = false;

    const db = new SQLite(join(dataDir, 'intake.sqlite'), { readonly: true });
    try {
      const events = db
        .prepare(
          `select id from events where type in ('intake.sent', 'chase.sent') and intake_id in (${ids.map(() => '?').join(',')})`,
        )
        .all(...ids) as { id: string }[];
      expect(events).toHaveLength(12);
      await eventually(
        () => Promise.resolve(events.every((e) => answered.has(e.id)) ? true : undefined),
        'every event answered after the restart',
        40_000,
      );
      await eventually(
        () => {
          const open = db
            .prepare("select count(*) as n from messages where status in ('pending', 'sending')")
            .get() as { n: number };
          return Promise.resolve(open.n === 0 ? true : undefined);
        },
        'every email settled',
        30_000,
      );
      const messages = db
        .prepare(`select id, status from messages where intake_id in (${ids.map(() => '?').join(',')})`)
        .all(...ids) as { id: string; status: string }[];
      const arrivals = new Map<string, number>();
      for (const mail of smtp.received) {
        const id = /<(msg_[^@>]+)@/.exec(mail.parsed.messageId ?? '')?.[1] ?? 'unknown';
        arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
      }
      // Invitation and reminder of each intake: sent exactly once, or cut off by the kill (recorded
      // failed, never sent again). Only what the process had in hand is cut off: at most the slots of
      // the message kind (DEFAULT_CONCURRENCY). A cut-off message arrived at most once: the process
      // can die after the relay accepted it and before its outcome was recorded.
      expect(messages.length).toBe(12);
      for (const m of messages) {
        if (m.status === 'sent') expect(arrivals.get(m.id), m.id).toBe(1);
        else {
          expect(m.status).toBe('failed');
          expect(arrivals.get(m.id) ?? 0, m.id).toBeLessThanOrEqual(1);
        }
      }
      expect(messages.filter((m) => m.status === 'failed').length).toBeLessThanOrEqual(DEFAULT_CONCURRENCY);
      expect(second.url).toBeTruthy();
    } finally {
      db.close();
    }
  }, 90_000);
});
