import { createHash, randomBytes } from 'node:crypto';
import { Upload, type DetailedError } from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { jpeg, png } from './helpers/images.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Resumable uploads through /portal/api/:id/items/:key/tus, driven by tus-js-client (the reference
 * client, here as an independent checker): a finished upload becomes a file of the item after the same
 * checks as POST …/files; an interrupted one resumes from its offset; limits hold before any byte.
 */
const ITEMS = [
  { key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png'], min_width: 100 } },
  { key: 'video', label: 'Video', type: 'file', constraints: { max_bytes: 4 * 1024 * 1024 } },
  { key: 'about', label: 'About', type: 'longtext' },
  { key: 'docs', label: 'Documents', type: 'file_list', constraints: { max_count: 1 } },
];

interface Sent {
  url: string | null;
  fileId: string | undefined;
}

function send(
  endpoint: string,
  bytes: Buffer,
  name: string,
  options: { chunkSize?: number; uploadUrl?: string; stopAfter?: number } = {},
) {
  return new Promise<Sent>((resolve, reject) => {
    const upload: Upload = new Upload(bytes, {
      endpoint,
      uploadUrl: options.uploadUrl ?? null,
      chunkSize: options.chunkSize ?? Infinity,
      retryDelays: null,
      uploadSize: bytes.length,
      metadata: { filename: name, filetype: 'application/octet-stream' },
      onChunkComplete: (_chunk, accepted) => {
        if (options.stopAfter !== undefined && accepted >= options.stopAfter) {
          void upload.abort().then(() => resolve({ url: upload.url, fileId: undefined }));
        }
      },
      onSuccess: ({ lastResponse }) =>
        resolve({ url: upload.url, fileId: lastResponse.getHeader('X-File-Id') }),
      onError: (error) => reject(error),
    });
    upload.start();
  });
}

const statusOf = (error: unknown) => (error as DetailedError).originalResponse?.getStatus();
const bodyOf = (error: unknown) =>
  JSON.parse((error as DetailedError).originalResponse?.getBody() ?? '{}') as Record<string, unknown>;

describe.each(DATABASES)('tus uploads on %s', (database) => {
  let server: TestServer;
  let api: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
  });
  afterAll(async () => server.stop());

  async function intake(language = 'en'): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Uploads',
      client: { email: 'c@example.com', language },
      items: ITEMS,
    });
    expect(created.status).toBe(201);
    return created.body.intake_id;
  }

  const files = (id: string, key: string) =>
    server.server.services.db.kysely
      .selectFrom('item_files')
      .select(['id', 'name', 'size', 'sha256'])
      .where('intake_id', '=', id)
      .where('item_key', '=', key)
      .execute();

  it('turns a finished upload into a file of the item', async () => {
    const id = await intake();
    const bytes = await png(300, 120);
    const sent = await send(`${server.url}/portal/api/${id}/items/logo/tus`, bytes, 'logo.png');
    expect(sent.url).toMatch(new RegExp(`/portal/api/${id}/items/logo/tus/[0-9a-f]{32}$`));
    const stored = await files(id, 'logo');
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      id: sent.fileId,
      name: 'logo.png',
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    const view = await client(server.url).get<{ items: { key: string; files: { file_id: string }[] }[] }>(
      `/portal/api/${id}`,
    );
    expect(view.body.items.find((i) => i.key === 'logo')?.files.map((f) => f.file_id)).toEqual([sent.fileId]);
    // The finished upload is gone from the tus directory: HEAD no longer finds it.
    const head = await fetch(sent.url ?? '', { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(head.status).toBe(404);
  });

  it('resumes an interrupted upload from its offset, and stores the bytes once', async () => {
    const id = await intake();
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const endpoint = `${server.url}/portal/api/${id}/items/video/tus`;
    const first = await send(endpoint, bytes, 'clip.mp4', { chunkSize: 1024 * 1024, stopAfter: 1024 * 1024 });
    expect(first.url).toBeTruthy();
    const head = await fetch(first.url ?? '', { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(Number(head.headers.get('upload-offset'))).toBeGreaterThanOrEqual(1024 * 1024);
    expect(await files(id, 'video')).toHaveLength(0);
    const resumed = await send(endpoint, bytes, 'clip.mp4', {
      uploadUrl: first.url ?? '',
      chunkSize: 1024 * 1024,
    });
    expect(resumed.url).toBe(first.url);
    const stored = await files(id, 'video');
    expect(stored).toHaveLength(1);
    expect(Number(stored[0]?.size)).toBe(bytes.length);
    expect(stored[0]?.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('refuses before any byte: too large, no room, not a file item, unknown or closed intake', async () => {
    const id = await intake();
    const tooLarge = await send(
      `${server.url}/portal/api/${id}/items/video/tus`,
      randomBytes(4 * 1024 * 1024 + 1),
      'big.bin',
    ).catch((error: unknown) => error);
    expect(statusOf(tooLarge)).toBe(413);
    expect(bodyOf(tooLarge)).toMatchObject({ error: 'payload_too_large' });
    expect(
      statusOf(
        await send(`${server.url}/portal/api/${id}/items/about/tus`, Buffer.from('x'), 'a.txt').catch(
          (e: unknown) => e,
        ),
      ),
    ).toBe(422);
    expect(
      statusOf(
        await send(
          `${server.url}/portal/api/in_${'Z'.repeat(22)}/items/logo/tus`,
          Buffer.from('x'),
          'a',
        ).catch((e: unknown) => e),
      ),
    ).toBe(404);
    // A list at its max_count refuses before any byte (a one-file item replaces instead: below).
    await send(`${server.url}/portal/api/${id}/items/docs/tus`, Buffer.from('one'), 'one.txt');
    const full = await send(
      `${server.url}/portal/api/${id}/items/docs/tus`,
      Buffer.from('two'),
      'two.txt',
    ).catch((e: unknown) => e);
    expect(statusOf(full)).toBe(422);
    expect(String(bodyOf(full).message)).toContain('max_count');
    const used = async () =>
      (await api.get<{ storage_bytes: { used: number } }>('/v1/usage')).body.storage_bytes.used;
    const [small, large] = [await png(200), await png(300)];
    const first = await send(`${server.url}/portal/api/${id}/items/logo/tus`, small, 'one.png');
    const before = await used();
    const second = await send(`${server.url}/portal/api/${id}/items/logo/tus`, large, 'two.png');
    // The replaced file's bytes no longer count against the account's storage.
    expect((await used()) - before).toBe(large.length - small.length);
    const logo = await client(server.url).get<{ items: { key: string; files: { file_id: string }[] }[] }>(
      `/portal/api/${id}`,
    );
    expect(logo.body.items.find((i) => i.key === 'logo')?.files.map((f) => f.file_id)).toEqual([
      second.fileId,
    ]);
    expect(second.fileId).not.toBe(first.fileId);
    // Another intake's upload URL is not this item's.
    const other = await intake();
    const started = await send(
      `${server.url}/portal/api/${other}/items/video/tus`,
      randomBytes(2 * 1024 * 1024),
      'v.bin',
      {
        chunkSize: 1024 * 1024,
        stopAfter: 1024 * 1024,
      },
    );
    const stolen = (started.url ?? '').replace(other, id);
    const head = await fetch(stolen, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(head.status).toBe(404);
    await api.post(`/v1/intakes/${other}/archive`);
    const closed = await send('', randomBytes(2 * 1024 * 1024), 'v.bin', {
      uploadUrl: started.url ?? '',
      chunkSize: 1024 * 1024,
    }).catch((e: unknown) => e);
    expect(statusOf(closed)).toBe(410);
  });

  it('checks the finished file like POST …/files, and says why in the client language', async () => {
    const id = await intake('de');
    const disguised = await send(
      `${server.url}/portal/api/${id}/items/logo/tus`,
      await jpeg(400),
      'logo.png',
    ).catch((e: unknown) => e);
    expect(statusOf(disguised)).toBe(422);
    expect(bodyOf(disguised)).toMatchObject({
      error: 'unprocessable',
      client_message: 'Dieser Dateityp wird hier nicht angenommen: Bitte PNG verwenden.',
    });
    expect(String(bodyOf(disguised).message)).toContain('logo.formats');
    expect(await files(id, 'logo')).toHaveLength(0);
  });
});
