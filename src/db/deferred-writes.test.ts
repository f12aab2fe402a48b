import { describe, expect, it } from 'vitest';
import {
  canCarry,
  combine,
  DEFERRABLE_MARK,
  isDeferrable,
  PendingWrites,
  type Statement,
} from './deferred-writes.js';

const write = (table: string, ...values: unknown[]): Statement => ({
  text: `insert into "${table}" ("a", "b") values ($1, $2) ${DEFERRABLE_MARK}`,
  values,
});

describe('deferrable writes', () => {
  it('are inserts marked at their end', () => {
    expect(isDeferrable(write('events', 1, 2).text)).toBe(true);
    expect(isDeferrable('insert into "events" ("a") values ($1)')).toBe(false);
    expect(isDeferrable(`update "events" set "a" = $1 ${DEFERRABLE_MARK}`)).toBe(false);
  });

  it('ride on a statement that names none of their tables, quoted or not', () => {
    const writes = [write('events', 1, 2), write('messages', 3, 4)];
    expect(canCarry('select * from "webhook_endpoints" where "account_id" = $1', writes)).toBe(true);
    expect(canCarry('update "chases" set "status" = $1 where "id" = $2', writes)).toBe(true);
    expect(canCarry('with x as (select 1) select * from x', writes)).toBe(true);
    expect(canCarry('select * from "events" where "id" = $1', writes)).toBe(false);
    expect(canCarry('select * from messages where id = $1', writes)).toBe(false);
    expect(canCarry('select count(*) from "public"."messages"', writes)).toBe(false);
  });

  it('never ride on a commit, a savepoint or a recursive query', () => {
    const writes = [write('events', 1, 2)];
    expect(canCarry('commit', writes)).toBe(false);
    expect(canCarry('savepoint "sp"', writes)).toBe(false);
    expect(canCarry('with recursive t(n) as (select 1) select * from t', writes)).toBe(false);
  });

  it('are combined with their carrier, every placeholder renumbered in order', () => {
    const carried = combine([write('events', 'e1', 'e2'), write('messages', 'm1', 'm2')], {
      text: 'select * from "webhook_endpoints" where "account_id" = $1 and "livemode" = $2',
      values: ['acct', 1],
    });
    expect(carried.text).toBe(
      `with w0 as (insert into "events" ("a", "b") values ($1, $2) ${DEFERRABLE_MARK}), ` +
        `w1 as (insert into "messages" ("a", "b") values ($3, $4) ${DEFERRABLE_MARK}) ` +
        'select * from "webhook_endpoints" where "account_id" = $5 and "livemode" = $6',
    );
    expect(carried.values).toEqual(['e1', 'e2', 'm1', 'm2', 'acct', 1]);
  });

  it("follow a carrier's own with clauses", () => {
    const carried = combine([write('events', 1, 2)], {
      text: 'with "due" as (select "id" from "jobs" where "due_at" <= $1) select * from "due"',
      values: [10],
    });
    expect(carried.text).toBe(
      `with w0 as (insert into "events" ("a", "b") values ($1, $2) ${DEFERRABLE_MARK}), ` +
        '"due" as (select "id" from "jobs" where "due_at" <= $3) select * from "due"',
    );
  });
});

describe('PendingWrites', () => {
  const empty = 'empty';
  function connection() {
    const sent: Statement[] = [];
    const pending = new PendingWrites();
    const send = (statement: Statement) => {
      sent.push(statement);
      return Promise.resolve(`answer to ${statement.text.slice(0, 6)}`);
    };
    return {
      sent,
      query: (text: string, inTransaction = true) =>
        pending.route({ text, values: [] }, inTransaction, send, empty),
    };
  }

  it('keeps a deferrable write inside a transaction, and sends it at once outside one', async () => {
    const inside = connection();
    expect(await inside.query(write('events').text)).toBe(empty);
    expect(inside.sent).toHaveLength(0);
    const outside = connection();
    expect(await outside.query(write('events').text, false)).toBe('answer to insert');
    expect(outside.sent.map((s) => s.text)).toEqual([write('events').text]);
  });

  it('lets the next statement carry the writes when it names none of their tables', async () => {
    const { sent, query } = connection();
    await query(write('events').text);
    await query(write('messages').text);
    expect(await query('select * from "webhook_endpoints"')).toBe('answer to with w');
    expect(sent.map((s) => s.text)).toEqual([
      `with w0 as (${write('events').text}), w1 as (${write('messages').text}) select * from "webhook_endpoints"`,
    ]);
  });

  it('sends the writes before a statement that reads their table, then that statement', async () => {
    const { sent, query } = connection();
    await query(write('events').text);
    await query(write('messages').text);
    expect(await query('select * from "messages"')).toBe('answer to select');
    expect(sent.map((s) => s.text)).toEqual([
      `with w0 as (${write('events').text}) ${write('messages').text}`,
      'select * from "messages"',
    ]);
  });

  it('sends the writes alone before a commit, and drops them at a rollback', async () => {
    const { sent, query } = connection();
    await query(write('events').text);
    await query('commit');
    expect(sent.map((s) => s.text)).toEqual([write('events').text, 'commit']);
    await query(write('events').text);
    await query('rollback');
    expect(sent.map((s) => s.text).slice(2)).toEqual(['rollback']);
  });

  it('fails the statement that follows when the writes sent before it fail', async () => {
    const pending = new PendingWrites();
    const sent: string[] = [];
    const send = (statement: Statement) => {
      sent.push(statement.text);
      return statement.text.startsWith('insert')
        ? Promise.reject(new Error('broken constraint'))
        : Promise.resolve('ok');
    };
    await pending.route(write('events'), true, send, 'empty');
    await expect(pending.route({ text: 'commit', values: [] }, true, send, 'empty')).rejects.toThrow(
      'broken constraint',
    );
    // Both went out, in order: the connection refuses the second itself.
    expect(sent).toEqual([write('events').text, 'commit']);
  });
});
