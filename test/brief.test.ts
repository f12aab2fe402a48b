import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface BriefFile {
  file_id: string;
  name: string;
  size: number;
  content_type: string;
  url: string;
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

describe.each(DATABASES)('the brief and its files on %s', (database) => {
  let server: TestServer;
  let live: Client;
  let liveKey: string;
  let other: Client;
  let reader: Client;
  let portal: Client;
  let anonymous: Client;

  beforeAll(async () => {
    server = await startTestServer(database);
    const account = await server.createAccount({ plan: 'agency' });
    liveKey = account.live_key;
    live = client(server.url, liveKey);
    other = client(server.url, (await server.createAccount({ plan: 'agency' })).live_key);
    reader = client(
      server.url,
      (await live.post<{ key: string }>('/v1/keys', { name: 'r', scopes: ['intakes:read'] })).body.key,
    );
    portal = client(server.url);
    anonymous = client(server.url);
  });
  afterAll(async () => {
    await server.stop();
  });

  const attach = (api: Client, id: string, bytes: Buffer, name: string, type = 'application/pdf') =>
    api.call<BriefFile & Record<string, unknown>>('POST', `/v1/intakes/${id}/brief_files`, {
      rawBody: bytes,
      headers: { 'content-type': type, 'x-filename': encodeURIComponent(name) },
    });

  it('shows the brief above the items, escaped, with its line breaks, and limits it to 5,000 characters', async () => {
    const brief = 'We rebuild your <b>site</b>.\nPlease send the items below & soon.';
    const created = await live.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Brief',
      client: { email: 'dana@example.com' },
      items: [{ key: 'about', label: 'About you', type: 'longtext' }],
      client_brief: brief,
    });
    const id = created.body.intake_id;
    const view = await portal.get<{ brief: string; brief_files: unknown[] }>(`/portal/api/${id}`);
    expect(view.body).toMatchObject({ brief, brief_files: [] });
    const page = await portal.get(`/portal/${id}`);
    expect(page.text).toContain(
      'We rebuild your &lt;b&gt;site&lt;/b&gt;.\nPlease send the items below &amp; soon.',
    );
    expect(page.text).not.toContain('<b>site</b>');
    expect(page.text.indexOf('class="brief"')).toBeLessThan(page.text.indexOf('id="items"'));
    const tooLong = await live.post('/v1/intakes', {
      project_name: 'Brief',
      client: { email: 'dana@example.com' },
      items: [{ key: 'a', label: 'A', type: 'text' }],
      client_brief: 'x'.repeat(5001),
    });
    expectError(tooLong, 400, 'invalid_request');
  });

  it('attaches brief files the client downloads from the portal through signed URLs', async () => {
    const created = await live.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Brief files',
      client: { email: 'dana@example.com' },
      items: [{ key: 'about', label: 'About you', type: 'longtext' }],
    });
    const id = created.body.intake_id;
    await expectSecured(anonymous, reader, 'POST', `/v1/intakes/${id}/brief_files`);
    expectError(await attach(other, id, PDF, 'x.pdf'), 404, 'not_found');

    const added = await attach(live, id, PDF, 'Style guide ü.pdf');
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({
      name: 'Style guide ü.pdf',
      size: PDF.length,
      content_type: 'application/pdf',
    });

    const listed = await reader.get<{ files: BriefFile[] }>(`/v1/intakes/${id}/brief_files`);
    expect(listed.body.files.map((f) => f.file_id)).toEqual([added.body.file_id]);
    expectError(await other.get(`/v1/intakes/${id}/brief_files`), 404, 'not_found');

    const view = await portal.get<{ brief_files: BriefFile[]; items: { key: string; files: unknown[] }[] }>(
      `/portal/api/${id}`,
    );
    expect(view.body.brief_files).toHaveLength(1);
    expect(view.body.items.map((i) => i.key)).toEqual(['about']);
    const download = await fetch(view.body.brief_files[0]?.url ?? '');
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(PDF);
    expect(download.headers.get('content-disposition')).toContain('attachment');

    const page = await portal.get(`/portal/${id}`);
    expect(page.text).toContain('class="brief-files"');
    expect(page.text).toContain('Style guide ü.pdf');

    // Brief files are not the client's: results and the item's files never show them.
    await portal.call('PUT', `/portal/api/${id}/items/about`, { body: { value: 'Hi' } });
    await portal.post(`/portal/api/${id}/items/about/submit`);
    const results = await live.get<{ items: { key: string }[] }>(
      `/v1/intakes/${id}/results?include_pending=true`,
    );
    expect(results.body.items.map((i) => i.key)).toEqual(['about']);

    expectError(await other.delete(`/v1/intakes/${id}/brief_files/${added.body.file_id}`), 404, 'not_found');
    expect((await live.delete(`/v1/intakes/${id}/brief_files/${added.body.file_id}`)).status).toBe(204);
    expectError(await live.delete(`/v1/intakes/${id}/brief_files/${added.body.file_id}`), 404, 'not_found');
    expect((await portal.get<{ brief_files: unknown[] }>(`/portal/api/${id}`)).body.brief_files).toEqual([]);
  });

  it('takes multipart uploads and at most 10 files', async () => {
    const created = await live.post<{ intake_id: string }>('/v1/intakes', {
      project_name: 'Many',
      client: { email: 'dana@example.com' },
      items: [{ key: 'a', label: 'A', type: 'text' }],
    });
    const id = created.body.intake_id;
    const form = new FormData();
    form.append('file', new Blob([PDF], { type: 'application/pdf' }), 'multi.pdf');
    const multi = await fetch(`${server.url}/v1/intakes/${id}/brief_files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${liveKey}` },
      body: form,
    });
    expect(multi.status).toBe(201);
    expect(await multi.json()).toMatchObject({ name: 'multi.pdf', content_type: 'application/pdf' });
    for (let i = 2; i < 10; i++)
      expect((await attach(live, id, Buffer.from(`note ${i}\n`), `n${i}.txt`, 'text/plain')).status).toBe(
        201,
      );
    expect((await attach(live, id, PDF, 'tenth.pdf')).status).toBe(201);
    expectError(await attach(live, id, PDF, 'eleventh.pdf'), 422, 'unprocessable');
  });
});
