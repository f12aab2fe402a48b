import { describe, expect, it } from 'vitest';
import {
  canCarry,
  combine,
  DEFERRABLE_MARK,
  isDeferrable,
  PendingWrites,
  type Statement,
  type StatementUnit,
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
  /** A unit as one line: its statements in order, joined by " | ". */
  const shown = (unit: StatementUnit) =>
    [unit.before, unit.main.text, unit.after].filter((t) => t !== undefined).join(' | ');
  function connection(fails: (unit: StatementUnit) => boolean = () => false, units = true) {
    const sent: string[] = [];
    const pending = new PendingWrites(units);
    const send = (unit: StatementUnit) => {
      sent.push(shown(unit));
      return fails(unit)
        ? Promise.reject(new Error('broken constraint'))
        : Promise.resolve(`answer to ${unit.main.text.slice(0, 6)}`);
    };
    return { sent, query: (text: string) => pending.route({ text, values: [] }, send, empty) };
  }

  it('keeps a deferrable write inside a transaction, and sends it at once outside one', async () => {
    const outside = connection();
    expect(await outside.query(write('events').text)).toBe('answer to insert');
    expect(outside.sent).toEqual([write('events').text]);
    const inside = connection();
    await inside.query('begin');
    expect(await inside.query(write('events').text)).toBe(empty);
    expect(inside.sent).toHaveLength(0);
  });

  it("holds a transaction's begin until its first statement, and sends them as one unit", async () => {
    const { sent, query } = connection();
    expect(await query('begin')).toBe(empty);
    expect(sent).toEqual([]);
    expect(await query('select 1')).toBe('answer to select');
    expect(await query('select 2')).toBe('answer to select');
    await query('commit');
    expect(sent).toEqual(['begin | select 1', 'select 2', 'commit']);
  });

  it('sends begin and commit alone where the connection cannot send units', async () => {
    const { sent, query } = connection(() => false, false);
    await query('begin');
    await query('select 1');
    await query(write('events').text);
    await query('commit');
    expect(sent).toEqual(['begin', 'select 1', write('events').text, 'commit']);
  });

  it('sends nothing for a transaction that sent nothing, and all of one of deferred writes at once', async () => {
    const { sent, query } = connection();
    await query('begin');
    await query('commit');
    await query('begin');
    await query(write('events').text);
    await query('rollback');
    expect(sent).toEqual([]);
    await query('begin');
    await query(write('events').text);
    await query(write('messages').text);
    await query('commit');
    expect(sent).toEqual([`begin | with w0 as (${write('events').text}) ${write('messages').text} | commit`]);
  });

  it('lets the next statement carry the writes when it names none of their tables', async () => {
    const { sent, query } = connection();
    await query('begin');
    await query('select 1');
    await query(write('events').text);
    await query(write('messages').text);
    expect(await query('select * from "webhook_endpoints"')).toBe('answer to with w');
    expect(sent.slice(1)).toEqual([
      `with w0 as (${write('events').text}), w1 as (${write('messages').text}) select * from "webhook_endpoints"`,
    ]);
  });

  it('sends the writes before a statement that reads their table, then that statement', async () => {
    const { sent, query } = connection();
    await query('begin');
    await query(write('events').text);
    await query(write('messages').text);
    expect(await query('select * from "messages"')).toBe('answer to select');
    expect(sent).toEqual([
      `begin | with w0 as (${write('events').text}) ${write('messages').text}`,
      'select * from "messages"',
    ]);
  });

  it('sends the writes with the commit, and drops them at a rollback', async () => {
    const { sent, query } = connection();
    await query('begin');
    await query('select 1');
    await query(write('events').text);
    await query('commit');
    expect(sent.slice(1)).toEqual([`${write('events').text} | commit`]);
    await query('begin');
    await query('select 1');
    await query(write('events').text);
    await query('rollback');
    expect(sent.slice(2)).toEqual(['begin | select 1', 'rollback']);
  });

  it('sends the writes before a rollback to a savepoint, which is no end of the transaction', async () => {
    const { sent, query } = connection();
    await query('begin');
    await query('savepoint "sp"');
    await query(write('events').text);
    await query('rollback to savepoint "sp"');
    await query(write('messages').text);
    await query('commit');
    expect(sent).toEqual([
      'begin | savepoint "sp"',
      write('events').text,
      'rollback to savepoint "sp"',
      `${write('messages').text} | commit`,
    ]);
  });

  it('commits after a rollback to a savepoint has undone a failed statement', async () => {
    const { sent, query } = connection((unit) => unit.main.text === 'select 1');
    await query('begin');
    await query('savepoint "sp"');
    await query('select 1').catch(() => undefined);
    await query('rollback to savepoint "sp"');
    await query('commit');
    expect(sent).toEqual(['begin | savepoint "sp"', 'select 1', 'rollback to savepoint "sp"', 'commit']);
  });

  it('fails the statement that follows when the writes sent before it fail', async () => {
    const { sent, query } = connection((unit) => unit.main.text.startsWith('with w0 as (insert'));
    await query('begin');
    await query(write('events').text);
    await query(write('events').text);
    await expect(query('select * from "events"')).rejects.toThrow('broken constraint');
    // Both went out, in order: the connection refuses the second itself.
    expect(sent).toEqual([
      `begin | with w0 as (${write('events').text}) ${write('events').text}`,
      'select * from "events"',
    ]);
  });

  it('refuses to commit once a statement of the transaction failed, and sends the rollback', async () => {
    const { sent, query } = connection((unit) => unit.main.text === 'select 1');
    await query('begin');
    await query('select 1').catch(() => undefined);
    await expect(query('commit')).rejects.toThrow(
      'The transaction failed on an earlier statement: not committed.',
    );
    await query('rollback');
    expect(sent).toEqual(['begin | select 1', 'rollback']);
    // The next transaction starts afresh.
    await query('begin');
    await query('select 2');
    await query('commit');
    expect(sent.slice(2)).toEqual(['begin | select 2', 'commit']);
  });
});
