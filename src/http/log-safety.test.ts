import { describe, expect, it } from 'vitest';
import { loggableUrl } from './log-safety.js';

describe('loggableUrl', () => {
  it('keeps only the first characters of intake ids, in paths and queries', () => {
    expect(loggableUrl('/portal/in_4f9KqZ2mX8pL0aB3cD5eFg/items')).toBe('/portal/in_4f9K…/items');
    expect(loggableUrl('/portal/api/in_4f9KqZ2mX8pL0aB3cD5eFg/items/logo/tus/abc')).toBe(
      '/portal/api/in_4f9K…/items/logo/tus/abc',
    );
    expect(loggableUrl('/v1/intakes/int_4f9KqZ2mX8pL0aB3cD5eFg/status')).toBe('/v1/intakes/int_4f9K…/status');
  });

  it('drops the signature of file URLs', () => {
    expect(loggableUrl('/files/file_abc?expires=1790000000&sig=0a1b2c3d')).toBe(
      '/files/file_abc?expires=1790000000&sig=…',
    );
  });

  it('leaves other URLs alone', () => {
    expect(loggableUrl('/v1/account?limit=10')).toBe('/v1/account?limit=10');
    expect(loggableUrl('/v1/keys/key_abc')).toBe('/v1/keys/key_abc');
  });
});
