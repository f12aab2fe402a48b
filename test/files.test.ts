import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { signFileUrl } from '../src/modules/files/signed-url.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface StoredFile {
  id: string;
  name: string;
  data: Buffer;
  contentType: string;
}

describe.each(DATABASES)('signed file downloads on %s', (database) => {
  let server: TestServer;
  let anonymous: Client;
  let secretKey: string;
  let logo: StoredFile;
  let sheet: StoredFile;
  let orphan: StoredFile;

  /** A file as the portal leaves it: bytes in storage, a row in item_files. */
  async function storeFile(
    intakeId: string,
    accountId: string,
    file: Omit<StoredFile, 'id'>,
    withBytes = true,
  ): Promise<StoredFile> {
    const { db, storage } = server.server.services;
    const id = newId('file');
    const storageKey = `${accountId}/${intakeId}/${id}`;
    if (withBytes) await storage.put(storageKey, Readable.from([file.data]));
    await db.kysely
      .insertInto('item_files')
      .values({
        id,
        intake_id: intakeId,
        account_id: accountId,
        livemode: 1,
        item_key: 'logo',
        storage_key: storageKey,
        name: file.name,
        size: file.data.length,
        content_type: file.contentType,
        width: null,
        height: null,
        sha256: createHash('sha256').update(file.data).digest('hex'),
        created_at: new Date().toISOString(),
      })
      .execute();
    return { id, ...file };
  }

  /** The signed path of a file, as the results endpoint would hand it out (signed at `nowMs`). */
  function signedPath(fileId: string, nowMs = Date.now()): string {
    const { url } = signFileUrl(server.url, secretKey, fileId, nowMs);
    return url.slice(server.url.length);
  }

  beforeAll(async () => {
    server = await startTestServer(database);
    anonymous = client(server.url);
    secretKey = server.server.services.config.secretKey;
    const account = await server.createAccount();
    const now = new Date().toISOString();
    const intakeId = newId('in', 24);
    await server.server.services.db.kysely
      .insertInto('intakes')
      .values({
        id: intakeId,
        account_id: account.account_id,
        livemode: 1,
        project_name: 'Website relaunch',
        client_email: 'client@example.com',
        client_language: 'en',
        status: 'in_progress',
        chase_schedule: 'standard',
        retention_mode: 'never',
        retention_anonymize: 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
    logo = await storeFile(intakeId, account.account_id, {
      name: 'Logo "final" – été.png',
      data: randomBytes(150_000),
      contentType: 'image/png',
    });
    sheet = await storeFile(intakeId, account.account_id, {
      name: 'prices.csv',
      data: Buffer.from('sku,price\nA-1,10\n'),
      contentType: 'text/csv',
    });
    orphan = await storeFile(
      intakeId,
      account.account_id,
      { name: 'gone.pdf', data: Buffer.from('%PDF-1.4'), contentType: 'application/pdf' },
      false,
    );
  });
  afterAll(async () => server.stop());

  it('serves the bytes with a good signature, as a safe attachment', async () => {
    const response = await fetch(server.url + signedPath(logo.id));
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(logo.data)).toBe(true);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('content-length')).toBe(String(logo.data.length));
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="Logo _final_ _ ete.png"; filename*=UTF-8''Logo%20%22final%22%20%E2%80%93%20%C3%A9t%C3%A9.png`,
    );
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const cache = /^private, max-age=(\d+)$/.exec(response.headers.get('cache-control') ?? '');
    expect(cache).not.toBeNull();
    expect(Number(cache?.[1])).toBeGreaterThan(86_400 - 60);
    expect(Number(cache?.[1])).toBeLessThanOrEqual(86_400);
  });

  it('serves each file its own content type and name', async () => {
    const response = await fetch(server.url + signedPath(sheet.id));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('sku,price\nA-1,10\n');
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="prices.csv"; filename*=UTF-8''prices.csv`,
    );
  });

  it('answers 403 to a tampered signature', async () => {
    const path = signedPath(logo.id);
    const sig = new URL(server.url + path).searchParams.get('sig') ?? '';
    const tampered = path.replace(
      sig,
      sig.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')),
    );
    expect(tampered).not.toBe(path);
    expectError(await anonymous.get(tampered), 403, 'forbidden');
  });

  it("answers 403 to another file's id with this file's signature", async () => {
    const path = signedPath(logo.id);
    expectError(await anonymous.get(path.replace(logo.id, sheet.id)), 403, 'forbidden');
  });

  it('answers 403 to a changed expiry, an expired link and a missing or malformed signature', async () => {
    const path = signedPath(logo.id);
    const expires = new URL(server.url + path).searchParams.get('expires') ?? '';
    expectError(
      await anonymous.get(path.replace(`expires=${expires}`, `expires=${Number(expires) + 86_400}`)),
      403,
      'forbidden',
    );
    const signedYesterday = signedPath(logo.id, Date.now() - 25 * 60 * 60 * 1000);
    expectError(await anonymous.get(signedYesterday), 403, 'forbidden');
    expectError(await anonymous.get(`/files/${logo.id}`), 403, 'forbidden');
    expectError(await anonymous.get(`/files/${logo.id}?expires=${expires}`), 403, 'forbidden');
    expectError(await anonymous.get(`/files/${logo.id}?expires=soon&sig=abc`), 403, 'forbidden');
  });

  it('answers 404 to a validly signed id that has no file', async () => {
    const unknown = newId('file');
    const response = await anonymous.get(signedPath(unknown));
    expectError(response, 404, 'not_found');
    expect(response.body.message).toContain(unknown);
  });

  it('answers 404 when the row exists but its bytes are no longer stored', async () => {
    expectError(await anonymous.get(signedPath(orphan.id)), 404, 'not_found');
  });

  it('is documented in the OpenAPI document as a public route', async () => {
    const doc = await anonymous.get<{ paths: Record<string, Record<string, Record<string, unknown>>> }>(
      '/v1/openapi.json',
    );
    const route = doc.body.paths['/files/{file_id}']?.get;
    expect(route?.tags).toEqual(['Files']);
    expect(route?.security).toBeUndefined();
    expect(Object.keys(route?.responses as object)).toEqual(expect.arrayContaining(['200', '403', '404']));
  });
});
