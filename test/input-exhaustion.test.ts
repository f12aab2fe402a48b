import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { sweepStaleTempFiles } from '../src/modules/files/stored-files.service.js';
import { addUsage } from '../src/modules/usage/usage.service.js';
import { png } from './helpers/images.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Event-loop and memory exhaustion through the anonymous portal and a caller's schemas. Every input
 * here is one the backtracking or unbounded code could not finish at all (hours, not seconds), so
 * the tests are deterministic: without the fixes they never return.
 */

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * A PNG whose header declares width × height RGBA pixels, with one row of data: a few hundred bytes
 * that a decoder would expand to gigabytes. Refusing it must need nothing but the header.
 */
function pngBomb(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA
  const row = deflateSync(Buffer.alloc(1 + width * 4));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', row),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** `<use>` of `<use>` of …: each level doubles what is drawn. */
function useBomb(levels: number): string {
  const defs = ['<circle id="u0" r="1"/>'];
  for (let i = 1; i <= levels; i++) {
    defs.push(`<g id="u${i}"><use href="#u${i - 1}"/><use href="#u${i - 1}" x="1"/></g>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><defs>${defs.join('')}</defs><use href="#u${levels}"/></svg>`;
}

/** A value that `^(a+)+$` rejects only after 2^40 steps of backtracking. */
const EVIL = `${'a'.repeat(40)}!`;

/** An `anyOf` chain through `$defs`: 40 bytes a level, and 2^levels branches to try. */
function anyOfChain(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { l0: { type: 'string', pattern: '^x$' } };
  for (let i = 1; i <= levels; i++)
    defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/l${levels}` };
}

/** `{"value": {"a": {"a": … "leaf" …}}}` as text (JSON.stringify itself overflows the stack on it). */
function nestedBody(levels: number): string {
  return `{"value":${'{"a":'.repeat(levels)}"leaf"${'}'.repeat(levels)}}`;
}

describe.each(DATABASES)('input exhaustion on %s', (database) => {
  let server: TestServer;
  let api: Client;
  let portal: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    api = client(server.url, account.live_key);
    portal = client(server.url);
  });
  afterAll(async () => server.stop());

  async function intakeWith(schema: Record<string, unknown>) {
    return api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Schemas',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'details', label: 'Details', type: 'structured', schema }],
    });
  }

  async function submit(id: string, value: unknown) {
    const saved = await portal.call('PUT', `/portal/api/${id}/items/details`, { body: { value } });
    if (saved.status !== 200) return saved;
    return portal.post(`/portal/api/${id}/items/details/submit`);
  }

  it('runs schema patterns on a linear-time engine: ^(a+)+$ against 40 a and ! answers at once', async () => {
    const created = await intakeWith({
      type: 'object',
      properties: { code: { type: 'string', pattern: '^(a+)+$' } },
    });
    expect(created.status, created.text).toBe(201);
    const refused = await submit(created.body.intake_id, { code: EVIL });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('must match pattern');
    expect((await submit(created.body.intake_id, { code: 'aaaa' })).status).toBe(200);
  });

  it('runs propertyNames and patternProperties on it too', async () => {
    const created = await intakeWith({
      type: 'object',
      propertyNames: { pattern: '^(a+)+$' },
      patternProperties: { '^(b+)+$': { type: 'string' } },
    });
    expect(created.status, created.text).toBe(201);
    expectError(await submit(created.body.intake_id, { [EVIL]: 'x' }), 422, 'unprocessable');
  });

  it('refuses patterns RE2 cannot run in linear time, at definition', async () => {
    const refused = await intakeWith({ type: 'string', pattern: '^(a)\\1$' });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('schema');
  });

  it('refuses a named backreference in a schema pattern at definition, not as the literal text', async () => {
    const refused = await intakeWith({ type: 'string', pattern: '^(?<x>a)\\k<x>$' });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('backreferences are not supported');
  });

  it("runs a text item's pattern on the same engine: ^(a+)+$ against 40 a and ! answers 422", async () => {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Patterns',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'code', label: 'Code', type: 'text', constraints: { pattern: '^(a+)+$' } }],
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const saved = await portal.call('PUT', `/portal/api/${id}/items/code`, { body: { value: EVIL } });
    const refused = saved.status === 200 ? await portal.post(`/portal/api/${id}/items/code/submit`) : saved;
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('pattern');
    await portal.call('PUT', `/portal/api/${id}/items/code`, { body: { value: 'aaaa' } });
    expect((await portal.post(`/portal/api/${id}/items/code/submit`)).status).toBe(200);
  });

  it('refuses a text pattern RE2 cannot run, at definition, naming the constraint', async () => {
    const refused = await api.post('/v1/intakes', {
      project_name: 'Patterns',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'code', label: 'Code', type: 'text', constraints: { pattern: '(?<x>a)\\k<x>' } }],
    });
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('constraints.pattern');
    expect(refused.text).toContain('backreferences are not supported');
  });

  it('refuses, at definition, a schema that expands exponentially through $ref (an anyOf chain)', async () => {
    const refused = await intakeWith(anyOfChain(40));
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('expands to more than');
    // A short chain is a normal schema.
    expect((await intakeWith(anyOfChain(3))).status).toBe(201);
  });

  it('refuses uniqueItems over objects without a bound, and wide combinators, at definition', async () => {
    const unique = await intakeWith({ type: 'array', items: { type: 'object' }, uniqueItems: true });
    expectError(unique, 422, 'unprocessable');
    expect(unique.text).toContain('uniqueItems');
    const bounded = { type: 'array', items: { type: 'object' }, uniqueItems: true, maxItems: 100 };
    expect((await intakeWith(bounded)).status).toBe(201);
    const wide = await intakeWith({ anyOf: Array.from({ length: 50 }, (_, i) => ({ const: i })) });
    expectError(wide, 422, 'unprocessable');
  });

  it('refuses a value too large to check before validating it (uniqueItems over 30,000 objects)', async () => {
    const created = await intakeWith({
      type: 'array',
      items: { type: 'object' },
      uniqueItems: true,
      maxItems: 100,
    });
    expect(created.status, created.text).toBe(201);
    const many = Array.from({ length: 30_000 }, (_, i) => ({ n: i }));
    const refused = await submit(created.body.intake_id, many);
    expectError(refused, 422, 'unprocessable');
    expect(refused.text).toContain('more than');
  });

  it('answers 422, not 500, for a value nested 6,000 levels deep', async () => {
    const created = await intakeWith({ type: 'object' });
    expect(created.status, created.text).toBe(201);
    const id = created.body.intake_id;
    const saved = await portal.call('PUT', `/portal/api/${id}/items/details`, {
      rawBody: nestedBody(6_000),
      headers: { 'content-type': 'application/json' },
    });
    expectError(saved, 422, 'unprocessable');
    expect(saved.text).toContain('nested deeper than');
  });

  async function fileIntake(): Promise<string> {
    const created = await api.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Images',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [
        { key: 'logo', label: 'Logo', type: 'image' },
        { key: 'photos', label: 'Photos', type: 'file_list', constraints: { max_count: 500 } },
      ],
    });
    expect(created.status, created.text).toBe(201);
    return created.body.intake_id;
  }

  const upload = (id: string, key: string, body: Buffer | string, type: string, name: string) =>
    fetch(`${server.url}/portal/api/${id}/items/${key}/files`, {
      method: 'POST',
      headers: { 'content-type': type, 'x-filename': name },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });

  it('refuses an image over IMAGE_MAX_PIXELS from its header, before decoding it', async () => {
    const id = await fileIntake();
    const refused = await upload(id, 'logo', pngBomb(16_000, 16_000), 'image/png', 'bomb.png');
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('16000×16000 pixels');
    expect((await upload(id, 'logo', await png(64, 64), 'image/png', 'ok.png')).status).toBe(201);
  });

  it('refuses SVG <use> chains', async () => {
    const id = await fileIntake();
    const refused = await upload(id, 'logo', useBomb(30), 'image/svg+xml', 'bomb.svg');
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('<use>');
    const flat =
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><defs><circle id="c" r="2"/></defs><use href="#c"/><use href="#c" x="4"/></svg>';
    expect((await upload(id, 'logo', flat, 'image/svg+xml', 'ok.svg')).status).toBe(201);
  });

  it('renders a preview once and keeps it: served again after the original is gone', async () => {
    const id = await fileIntake();
    const uploaded = await upload(id, 'logo', await png(300, 100), 'image/png', 'logo.png');
    const { file_id: fileId } = (await uploaded.json()) as { file_id: string };
    const url = `${server.url}/portal/api/${id}/items/logo/files/${fileId}/thumbnail`;
    const first = await fetch(url);
    expect(first.status).toBe(200);
    const rendered = Buffer.from(await first.arrayBuffer());
    const row = await server.server.services.db.kysely
      .selectFrom('item_files')
      .select('storage_key')
      .where('id', '=', fileId)
      .executeTakeFirstOrThrow();
    await server.server.services.storage.delete(row.storage_key);
    const again = await fetch(url);
    expect(again.status).toBe(200);
    expect(Buffer.from(await again.arrayBuffer()).equals(rendered)).toBe(true);
    expect(await readdir(join(server.dataDir, 'thumbnails'))).toContain(`${fileId}.webp`);
  });

  it('limits how many previews one address may have rendered per hour (THUMBNAIL_RENDERS_PER_HOUR)', async () => {
    const limited = await startTestServer(database, { THUMBNAIL_RENDERS_PER_HOUR: '3' });
    try {
      const account = await limited.createAccount({ plan: 'agency' });
      const created = await client(limited.url, account.live_key).post<{ intake_id: string }>('/v1/intakes', {
        project_name: 'Previews',
        client: { email: 'c@example.com', name: 'Dana' },
        items: [{ key: 'photos', label: 'Photos', type: 'file_list', constraints: { max_count: 10 } }],
      });
      const id = created.body.intake_id;
      const image = new Uint8Array(await png(8, 8));
      const files: string[] = [];
      for (let i = 0; i < 4; i++) {
        const uploaded = await fetch(`${limited.url}/portal/api/${id}/items/photos/files`, {
          method: 'POST',
          headers: { 'content-type': 'image/png', 'x-filename': `p${i}.png` },
          body: image,
        });
        expect(uploaded.status).toBe(201);
        files.push(((await uploaded.json()) as { file_id: string }).file_id);
      }
      const thumb = (fileId: string) =>
        fetch(`${limited.url}/portal/api/${id}/items/photos/files/${fileId}/thumbnail`);
      for (const fileId of files.slice(0, 3)) expect((await thumb(fileId)).status).toBe(200);
      const refused = await thumb(files[3] as string);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      // What is already rendered is still served.
      expect((await thumb(files[0] as string)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  /** Fills the account's storage (live or test) to `free` bytes under its 1 GiB free-plan quota. */
  async function nearlyFull(livemode: boolean, free: number) {
    const account = await server.createAccount({ plan: 'free' });
    const key = livemode ? account.live_key : account.test_key;
    const created = await client(server.url, key).post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Quota',
      client: { email: 'c@example.com', name: 'Dana' },
      items: [{ key: 'files', label: 'Files', type: 'file_list', constraints: { max_count: 10 } }],
    });
    expect(created.status, created.text).toBe(201);
    const world = { accountId: account.account_id, livemode };
    await addUsage(server.server.services.db.kysely, world, 'storage_bytes', 1024 ** 3 - free, new Date());
    return created.body.intake_id;
  }

  const startTus = (id: string, length: number) =>
    fetch(`${server.url}/portal/api/${id}/items/files/tus`, {
      method: 'POST',
      headers: {
        'tus-resumable': '1.0.0',
        'upload-length': String(length),
        'upload-metadata': 'filename YS5iaW4=',
      },
    });

  it('counts unfinished resumable uploads against the storage quota from their start', async () => {
    const id = await nearlyFull(true, 1_000_000);
    const first = await startTus(id, 600_000);
    expect(first.status).toBe(201);
    const second = await startTus(id, 600_000);
    expect(second.status).toBe(402);
    expect(await second.text()).toContain('unfinished uploads');
    // Cancelling the first frees its reservation.
    const location = first.headers.get('location') ?? '';
    const cancelled = await fetch(new URL(location, server.url), {
      method: 'DELETE',
      headers: { 'tus-resumable': '1.0.0' },
    });
    expect(cancelled.status).toBe(204);
    expect((await startTus(id, 600_000)).status).toBe(201);
  });

  it('gives test mode a storage quota', async () => {
    const id = await nearlyFull(false, 100);
    const refused = await upload(id, 'files', await png(64, 64), 'image/png', 'a.png');
    expect(refused.status).toBe(402);
    expect(await refused.text()).toContain('test-mode file storage quota');
  });

  it('sweeps temp files left by uploads of a killed process, and only those', async () => {
    const tmp = join(server.dataDir, 'tmp');
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, 'crashed-upload'), 'x'.repeat(1000));
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(tmp, 'crashed-upload'), twoHoursAgo, twoHoursAgo);
    await writeFile(join(tmp, 'upload-in-flight'), 'x');
    expect(await sweepStaleTempFiles(server.server.services)).toEqual(['crashed-upload']);
    expect(await readdir(tmp)).toContain('upload-in-flight');
    expect(await readdir(tmp)).not.toContain('crashed-upload');
  });
});
