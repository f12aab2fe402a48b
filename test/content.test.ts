import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './helpers/env.js';
import { createIntake, createWorld, type HardeningWorld } from './helpers/hardening-world.js';
import { png } from './helpers/images.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Content an attacker controls: SVG that scripts, embeds HTML, loads external resources or expands
 * entities; HTML dressed as a PNG; file names built to break headers, paths or the display. Checked
 * end to end: the portal upload, then the download through the signed URL.
 */

const SVG_ATTACKS: Record<string, string> = {
  script: `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(document.cookie)</script><rect width="10" height="10"/></svg>`,
  handler: `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="alert(1)"><rect width="10" height="10" onclick="alert(2)"/></svg>`,
  foreignObject: `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><foreignObject width="10" height="10"><iframe xmlns="http://www.w3.org/1999/xhtml" src="javascript:alert(3)"></iframe></foreignObject><rect width="10" height="10"/></svg>`,
  external: `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><image href="http://169.254.169.254/latest" width="10" height="10"/><use xlink:href="https://evil.example/sprite.svg#x"/><rect width="10" height="10" style="fill:url(https://evil.example/p.svg#g)"/><style>@import url(https://evil.example/x.css); rect { fill: red }</style></svg>`,
  javascriptHref: `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><a xlink:href="javascript:alert(4)"><rect width="10" height="10"/></a><animate attributeName="href" to="javascript:alert(5)"/></svg>`,
  entity: `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&xxe;</text></svg>`,
  billionLaughs: `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&d;&d;&d;&d;</text></svg>`,
};

/** What must not survive into a stored SVG, whatever the sanitizer chose to do. */
const FORBIDDEN_IN_SVG = [
  /<script/i,
  /\son[a-z]+\s*=/i,
  /foreignObject/i,
  /<iframe/i,
  /javascript:/i,
  /https?:\/\//i,
  /<!ENTITY/i,
  /<!DOCTYPE/i,
  /@import/i,
  /<image/i,
  /<animate/i,
];

const NASTY_NAMES = [
  '../../../../etc/passwd',
  '..\\..\\windows\\system32\\evil.png',
  'a"; filename="evil.html',
  'line\r\nSet-Cookie: session=stolen.png',
  'invoice\u202Egnp.exe',
  'zero\u200Bwidth\u2066isolate\u2069.png',
  'c1\u0085control\u009b.png',
  'ünïcödé 日本語 😀.png',
  '..',
  '.',
  '%2e%2e%2fescape.png',
  'x'.repeat(1_000) + '.png',
  '\uD800lone.png',
];

interface Upload {
  status: number;
  body: { file_id?: string; name?: string; error?: string };
}

async function upload(
  baseUrl: string,
  intakeId: string,
  key: string,
  bytes: Uint8Array,
  type: string,
  name: string,
): Promise<Upload> {
  const response = await fetch(`${baseUrl}/portal/api/${intakeId}/items/${key}/files`, {
    method: 'POST',
    headers: {
      'content-type': type,
      'x-filename': encodeURIComponent(name.replace(/[\uD800-\uDFFF]/gu, '\uFFFD')),
    },
    body: bytes,
  });
  return { status: response.status, body: (await response.json()) as Upload['body'] };
}

describe.each(DATABASES)('hostile content on %s', (database) => {
  let server: TestServer;
  let world: HardeningWorld;

  beforeAll(async () => {
    server = await startTestServer(database);
    world = await createWorld(server);
  });
  afterAll(async () => server?.stop());

  /** Submits the item and downloads its files through the signed URLs of the results. */
  async function downloads(intakeId: string, key: string) {
    const submitted = await fetch(`${server.url}/portal/api/${intakeId}/items/${key}/submit`, {
      method: 'POST',
    });
    expect(submitted.status).toBe(200);
    const results = await world.api.get<{
      items: { key: string; value: { files: { url: string; name: string }[] } | null }[];
    }>(`/v1/intakes/${intakeId}/results?include_pending=true`);
    const files = results.body.items.find((item) => item.key === key)?.value?.files ?? [];
    return Promise.all(
      files.map(async (file) => {
        const response = await fetch(file.url);
        return {
          name: file.name,
          headers: response.headers,
          text: await response.text(),
          status: response.status,
        };
      }),
    );
  }

  it('neutralizes or refuses every SVG attack, and serves what it keeps as a sandboxed attachment', async () => {
    let stored = 0;
    for (const [attack, svg] of Object.entries(SVG_ATTACKS)) {
      const id = await createIntake(world.api, {
        items: [{ key: 'art', label: 'Art', type: 'file_list', constraints: { formats: ['svg'] } }],
      });
      const answer = await upload(
        server.url,
        id,
        'art',
        new TextEncoder().encode(svg),
        'image/svg+xml',
        `${attack}.svg`,
      );
      expect([201, 422], `${attack}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
      if (answer.status !== 201) continue;
      stored++;
      const [file] = await downloads(id, 'art');
      expect(file?.status).toBe(200);
      // Namespace names are identifiers, never fetched: everything else that looks like a URL must go.
      const text = (file?.text ?? '').replace(/http:\/\/www\.w3\.org\/(2000\/svg|1999\/xlink)/g, '');
      for (const pattern of FORBIDDEN_IN_SVG) expect(text, `${attack} keeps ${pattern}`).not.toMatch(pattern);
      expect(file?.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(file?.headers.get('x-content-type-options')).toBe('nosniff');
      expect(file?.headers.get('content-security-policy')).toContain('sandbox');
    }
    // Entities are refused outright; the others are cleaned and kept.
    expect(stored).toBeGreaterThanOrEqual(4);
  });

  it('refuses HTML dressed as a PNG, and serves a PNG with trailing HTML only as a PNG attachment', async () => {
    const html = new TextEncoder().encode('<html><body><script>alert(1)</script></body></html>');
    const disguised = await upload(server.url, world.intakeId, 'logo', html, 'image/png', 'photo.png');
    expect(disguised.status).toBe(422);
    // A real PNG with a page appended after its end: valid as an image, so stored, but only ever
    // served as image/png, as an attachment, never sniffed into HTML.
    const polyglot = Buffer.concat([await png(32, 32), Buffer.from(html)]);
    const id = await createIntake(world.api, {
      items: [{ key: 'logo', label: 'Logo', type: 'image', constraints: { formats: ['png'] } }],
    });
    const stored = await upload(server.url, id, 'logo', polyglot, 'text/html', 'page.html');
    expect(stored.status).toBe(201);
    const [file] = await downloads(id, 'logo');
    expect(file?.headers.get('content-type')).toBe('image/png');
    expect(file?.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(file?.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('stores and serves hostile file names safely', async () => {
    const id = await createIntake(world.api, {
      items: [{ key: 'docs', label: 'Docs', type: 'file_list', constraints: { max_count: 50 } }],
    });
    const bytes = await png(16, 16);
    for (const name of NASTY_NAMES) {
      const answer = await upload(server.url, id, 'docs', bytes, 'image/png', name);
      expect(answer.status, `${JSON.stringify(name)}: ${JSON.stringify(answer.body)}`).toBe(201);
      const stored = answer.body.name ?? '';
      expect(stored, JSON.stringify(name)).not.toMatch(/[/\\]/);
      expect(stored, JSON.stringify(name)).not.toMatch(/[\p{Cc}\p{Cf}\u2028\u2029]/u);
      expect(['.', '..', ''], JSON.stringify(name)).not.toContain(stored);
      expect([...stored].length).toBeLessThanOrEqual(255);
    }
    const files = await downloads(id, 'docs');
    expect(files).toHaveLength(NASTY_NAMES.length);
    for (const file of files) {
      const disposition = file.headers.get('content-disposition') ?? '';
      expect(disposition).toMatch(
        /^attachment; filename="[^"\\]*"; filename\*=UTF-8''[A-Za-z0-9%._~!$&+,;=:@-]*$/,
      );
      expect(disposition).not.toMatch(/[\r\n]/);
      expect(file.headers.get('set-cookie')).toBeNull();
      expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });
});
