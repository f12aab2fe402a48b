import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transaction } from 'kysely';
import type { Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { ApiError } from '../src/http/errors.js';
import { IDEMPOTENCY_TTL_MS, idempotentCreate, validateIdempotencyKey } from '../src/http/idempotency.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/**
 * The Idempotency-Key mechanism against a real database. The "resource" is an audit entry, a table
 * every database has from the first migration, so the test needs no resource of its own.
 */
describe.each(DATABASES)('idempotent creation on %s', (database) => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Db;
  const scope = { apiKeyId: 'key_test', accountId: 'acct_test', livemode: true };

  beforeAll(async () => {
    handle = await openTestDatabase(database);
    db = handle.db;
  });
  afterAll(async () => handle.close());

  let created = 0;
  function op(label: string, delayMs = 0) {
    return {
      resourceType: 'thing',
      create: async (trx: Transaction<Database>) => {
        const id = `aud_${label}_${created++}`;
        await trx
          .insertInto('audit_entries')
          .values({
            id,
            account_id: scope.accountId,
            livemode: 1,
            action: label,
            resource_type: 'thing',
            resource_id: null,
            actor_type: 'system',
            actor_id: null,
            request_id: null,
            created_at: new Date().toISOString(),
          })
          .execute();
        if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
        return { id, value: { id, label } };
      },
      load: async (id: string) => {
        const row = await db.kysely
          .selectFrom('audit_entries')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        return { id: row.id, label: row.action };
      },
    };
  }

  async function countThings(label: string): Promise<number> {
    const rows = await db.kysely
      .selectFrom('audit_entries')
      .select('id')
      .where('action', '=', label)
      .execute();
    return rows.length;
  }

  it('creates once and replays the original for the same key and body', async () => {
    const now = new Date();
    const first = await idempotentCreate(
      db.kysely,
      scope,
      'k-replay',
      { a: 1, b: [1, 2] },
      now,
      op('replay'),
    );
    const again = await idempotentCreate(
      db.kysely,
      scope,
      'k-replay',
      { b: [1, 2], a: 1 },
      now,
      op('replay'),
    );
    expect(first.created).toBe(true);
    expect(again).toEqual({ created: false, value: first.value });
    expect(await countThings('replay')).toBe(1);
  });

  it('answers 409 with the existing resource when the body differs', async () => {
    const now = new Date();
    const first = await idempotentCreate(db.kysely, scope, 'k-conflict', { a: 1 }, now, op('conflict'));
    const error = await idempotentCreate(db.kysely, scope, 'k-conflict', { a: 2 }, now, op('conflict')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('conflict');
    expect((error as ApiError).extra.resource).toEqual(first.value);
    expect(await countThings('conflict')).toBe(1);
  });

  it('scopes keys to the API key and forgets them after 24 hours', async () => {
    const now = new Date();
    await idempotentCreate(db.kysely, scope, 'k-scope', {}, now, op('scope'));
    const otherKey = await idempotentCreate(
      db.kysely,
      { ...scope, apiKeyId: 'key_other' },
      'k-scope',
      {},
      now,
      op('scope'),
    );
    expect(otherKey.created).toBe(true);
    const later = new Date(now.getTime() + IDEMPOTENCY_TTL_MS + 1000);
    const afterExpiry = await idempotentCreate(db.kysely, scope, 'k-scope', {}, later, op('scope'));
    expect(afterExpiry.created).toBe(true);
    expect(await countThings('scope')).toBe(3);
  });

  it('leaves nothing behind when creation fails, so a retry can succeed', async () => {
    const now = new Date();
    const failing = {
      ...op('fails'),
      create: async () => {
        await Promise.resolve();
        throw new Error('boom');
      },
    };
    await expect(idempotentCreate(db.kysely, scope, 'k-fail', {}, now, failing)).rejects.toThrow('boom');
    const retry = await idempotentCreate(db.kysely, scope, 'k-fail', {}, now, op('fails'));
    expect(retry.created).toBe(true);
  });

  it('creates exactly one resource under concurrent requests with one key', async () => {
    const now = new Date();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        idempotentCreate(db.kysely, scope, 'k-race', { x: 1 }, now, op('race', 30)),
      ),
    );
    expect(await countThings('race')).toBe(1);
    const fulfilled = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(fulfilled.filter((o) => o.created)).toHaveLength(1);
    const ids = new Set(fulfilled.map((o) => o.value.id));
    expect(ids.size).toBe(1);
    for (const o of outcomes) {
      if (o.status === 'rejected') expect((o.reason as ApiError).code).toBe('conflict');
    }
  });

  it('validates the header value', () => {
    expect(validateIdempotencyKey(undefined)).toBeUndefined();
    expect(validateIdempotencyKey('7b1c5a0e-0d8b-4bd3-9d7e-1f0c1a2b3c4d')).toBe(
      '7b1c5a0e-0d8b-4bd3-9d7e-1f0c1a2b3c4d',
    );
    expect(() => validateIdempotencyKey('')).toThrow(ApiError);
    expect(() => validateIdempotencyKey('has space')).toThrow(ApiError);
    expect(() => validateIdempotencyKey('x'.repeat(256))).toThrow(ApiError);
  });
});
