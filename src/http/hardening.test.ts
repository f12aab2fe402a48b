import { describe, expect, it } from 'vitest';
import { safeFileName } from '../lib/file-names.js';
import { jsonHasNul } from './input-safety.js';
import { errorStatusesFor } from './openapi.js';
import { wantsHsts } from './security-headers.js';
import { timeoutOptions } from './timeouts.js';

describe('jsonHasNul', () => {
  it('finds a \\u0000 escape, in any case, and a raw NUL', () => {
    expect(jsonHasNul('{"a":"x\\u0000y"}')).toBe(true);
    expect(jsonHasNul('{"a":"\\U0000"}')).toBe(true);
    expect(jsonHasNul('{"a":"\\\\\\u0000"}')).toBe(true);
    expect(jsonHasNul('{"a":"x\u0000"}')).toBe(true);
  });

  it('leaves an escaped backslash followed by the letters alone', () => {
    expect(jsonHasNul('{"a":"\\\\u0000"}')).toBe(false);
    expect(jsonHasNul('{"a":"\\u00001"}')).toBe(true);
    expect(jsonHasNul('{"a":"\\u0001"}')).toBe(false);
  });
});

describe('errorStatusesFor', () => {
  it('documents by kind: every route, secured routes, writes and portal routes', () => {
    expect(errorStatusesFor({ method: 'GET', url: '/healthz', secured: false })).toEqual([400, 404, 500]);
    expect(errorStatusesFor({ method: 'GET', url: '/v1/intakes', secured: true }).sort()).toEqual(
      [400, 401, 402, 403, 404, 429, 500].sort(),
    );
    const write = errorStatusesFor({ method: ['POST'], url: '/v1/intakes', secured: true });
    for (const status of [409, 413, 415, 422]) expect(write).toContain(status);
    const portal = errorStatusesFor({
      method: 'PUT',
      url: '/portal/api/:intake_id/items/:key',
      secured: false,
    });
    for (const status of [410, 413, 415, 422, 429]) expect(portal).toContain(status);
    expect(portal).not.toContain(401);
  });
});

describe('wantsHsts', () => {
  it('is on in production and behind https URLs only', () => {
    const local = { production: false, appUrl: 'http://localhost:3000', baseUrl: 'http://localhost:3000' };
    expect(wantsHsts(local)).toBe(false);
    expect(wantsHsts({ ...local, production: true })).toBe(true);
    expect(wantsHsts({ ...local, appUrl: 'https://intake.example' })).toBe(true);
  });
});

describe('timeoutOptions', () => {
  it('keeps the header deadline within the request deadline and checks often enough', () => {
    const options = timeoutOptions({ headersMs: 20_000, requestMs: 5_000 });
    expect(options.http.headersTimeout).toBe(5_000);
    expect(options.http.connectionsCheckingInterval).toBeLessThanOrEqual(5_000);
    expect(timeoutOptions().http.headersTimeout).toBeGreaterThan(0);
    expect(timeoutOptions({ headersMs: 400 }).http.connectionsCheckingInterval).toBe(250);
  });
});

describe('safeFileName', () => {
  it('keeps the base name and drops controls, bidi overrides and zero-width marks', () => {
    expect(safeFileName('../../etc/passwd')).toBe('passwd');
    expect(safeFileName('C:\\Users\\x\\report.pdf')).toBe('report.pdf');
    expect(safeFileName('invoice\u202Egnp.exe')).toBe('invoicegnp.exe');
    expect(safeFileName('a\u200Bb\u0085c\r\nd.txt')).toBe('abcd.txt');
    expect(safeFileName('ünïcödé 日本語 😀.png')).toBe('ünïcödé 日本語 😀.png');
  });

  it('never answers an empty name, "." or ".."', () => {
    for (const name of ['', '   ', '.', '..', '../..', '\u202E', 'dir/'])
      expect(safeFileName(name)).toBe('file');
  });

  it('caps the length at 255 characters without splitting one', () => {
    const long = safeFileName('😀'.repeat(300));
    expect([...long]).toHaveLength(255);
    expect(long).not.toMatch(/[\uD800-\uDFFF](?![\uDC00-\uDFFF])/u);
  });
});
