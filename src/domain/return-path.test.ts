import { describe, expect, it } from 'vitest';
import { safeReturnPath } from './return-path.js';

describe('safeReturnPath', () => {
  it('keeps paths of this site, with their query', () => {
    for (const path of [
      '/dashboard',
      '/dashboard/intakes/in_abc?notice=saved&x=%2F',
      '/dashboard/settings?notice=saved#notifications',
      '/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fapp.example%2Fcb',
      "/a-b._~!$&'()*+,;=:@",
    ]) {
      expect(safeReturnPath(path)).toBe(path);
    }
  });

  it('refuses every form a browser would take to another origin, and anything that is not a path', () => {
    for (const value of [
      '//evil.example',
      '/\t/evil.example',
      '/\n/evil.example',
      '/\r\n/evil.example',
      '/ /evil.example',
      '/\\evil.example',
      '\\/evil.example',
      '/\\/evil.example',
      'https://evil.example/',
      'javascript:alert(1)',
      'dashboard',
      '',
      '/dash\u0000board',
      '/dash\u00a0board',
      '/caf\u00e9',
      '/bad%zzescape',
      '/bad%',
      '/' + 'a'.repeat(500),
      undefined,
      null,
      42,
      ['/dashboard'],
    ]) {
      expect(safeReturnPath(value), JSON.stringify(value)).toBeNull();
    }
  });
});
