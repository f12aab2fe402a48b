import { expect } from 'vitest';
import type { Client } from './http.js';

/** The envelope every error answer must have, and the request id it must share with its header. */
export function expectError(
  response: { status: number; body: Record<string, unknown>; headers: Headers },
  status: number,
  code: string,
): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.error).toBe(code);
  expect(typeof response.body.message).toBe('string');
  expect(response.body.request_id).toMatch(/^req_[0-9A-Za-z]+$/);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
}

/**
 * The security cases every authenticated route shares: no key, a malformed key, an unknown key → 401;
 * a key without the needed scope → 403.
 */
export async function expectSecured(
  anonymous: Client,
  withoutScope: Client | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<void> {
  expectError(await anonymous.call(method, path, { body }), 401, 'unauthorized');
  expectError(
    await anonymous.call(method, path, { body, headers: { authorization: 'Bearer not-a-key' } }),
    401,
    'unauthorized',
  );
  const unknownKey = `svc_live_${'A'.repeat(43)}`;
  expectError(
    await anonymous.call(method, path, { body, headers: { authorization: `Bearer ${unknownKey}` } }),
    401,
    'unauthorized',
  );
  if (withoutScope) expectError(await withoutScope.call(method, path, { body }), 403, 'forbidden');
}
