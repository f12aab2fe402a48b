import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, enqueueJob, jobClock } from '../src/jobs/jobs.js';
import { MAX_ADVANCE_SECONDS } from '../src/modules/testmode/testmode.service.js';
import { DATABASES } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import { expectError, expectSecured } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// Test-only job kinds, registered on the running server's worker.
const Mark = defineJob('test_testmode.mark', z.strictObject({ label: z.string() }), { testOnly: true });
const Chain = defineJob('test_testmode.chain', z.strictObject({ step: z.number().int() }), {
  testOnly: true,
});

/** One turn of the event loop, as a handler doing I/O would take. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const HOUR = 3_600_000;
const ADVANCE = '/v1/test_helpers/advance_clock';

interface Advanced {
  test_clock: string;
  advanced_seconds: number;
  jobs_run: number;
}

describe.each(DATABASES)('test clock on %s', (database) => {
  let server: TestServer;
  let anonymous: Client;
  let live: Client;
  let test: Client;
  let accountId: string;
  let otherAccountId: string;
  const ran: string[] = [];
  /** The test time each chain step saw (its mode's clock), against real time. */
  const chainSeen: { step: number; testNow: number; realNow: number }[] = [];

  beforeAll(async () => {
    server = await startTestServer(database);
    anonymous = client(server.url);
    const account = await server.createAccount();
    accountId = account.account_id;
    live = client(server.url, account.live_key);
    test = client(server.url, account.test_key);
    otherAccountId = (await server.createAccount()).account_id;

    const { worker, services } = server.server;
    worker.register(Mark, async (job) => {
      await tick();
      ran.push(`${job.livemode ? 'live' : 'test'}:${job.payload.label}`);
    });
    worker.register(Chain, async (job) => {
      const clock = await jobClock(services.db.kysely, services.clock, job);
      chainSeen.push({ step: job.payload.step, testNow: clock.now().getTime(), realNow: Date.now() });
      if (job.payload.step < 3) {
        // Follow-up work due at once: advance_clock must run it too before answering.
        await enqueueJob(services.db.kysely, {
          accountId: job.accountId,
          livemode: job.livemode,
          kind: Chain,
          subjectId: job.subjectId,
          payload: { step: job.payload.step + 1 },
          dueAt: services.clock.now().getTime(),
        });
      }
    });
  });
  afterAll(async () => server.stop());

  function enqueue(label: string, livemode: boolean, dueInMs: number, account = accountId) {
    return enqueueJob(server.server.services.db.kysely, {
      accountId: account,
      livemode,
      kind: Mark,
      subjectId: 'in_testmode',
      payload: { label },
      dueAt: Date.now() + dueInMs,
    });
  }

  const jobRow = (id: string) =>
    server.server.services.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();

  it('is secured, and refuses live keys with 403', async () => {
    await expectSecured(anonymous, undefined, 'POST', ADVANCE, { seconds: 60 });
    const refused = await live.post(ADVANCE, { seconds: 60 });
    expectError(refused, 403, 'forbidden');
    expect(refused.body.message).toContain('svc_test_');
    // Refused before the body is looked at.
    expectError(await live.post(ADVANCE, { seconds: 'soon' }), 403, 'forbidden');
  });

  it('rejects a bad body with 400 naming the problem', async () => {
    for (const body of [
      {},
      { seconds: 0 },
      { seconds: -5 },
      { seconds: 1.5 },
      { seconds: '60' },
      { seconds: MAX_ADVANCE_SECONDS + 1 },
    ]) {
      const answer = await test.post(ADVANCE, body);
      expectError(answer, 400, 'invalid_request');
      expect(answer.body.message).toContain('body.seconds');
    }
    const typo = await test.post(ADVANCE, { seconds: 60, secs: 60 });
    expectError(typo, 400, 'invalid_request');
    expect(typo.body.message).toContain('secs');
  });

  it('moves the test clock and runs every test job that fell due before answering', async () => {
    const dueIn1h = await enqueue('1h', false, HOUR);
    const dueIn3h = await enqueue('3h', false, 3 * HOUR);
    const liveIn1h = await enqueue('live-1h', true, HOUR);
    const otherAccount = await enqueue('other-account', false, HOUR, otherAccountId);
    const chainStart = await enqueueJob(server.server.services.db.kysely, {
      accountId,
      livemode: false,
      kind: Chain,
      subjectId: 'in_chain',
      payload: { step: 1 },
      dueAt: Date.now() + 90 * 60_000,
    });
    const liveDueAt = (await jobRow(liveIn1h))?.due_at;
    const threeHourDueAt = (await jobRow(dueIn3h))?.due_at ?? 0;

    const before = Date.now();
    const answer = await test.post<Advanced>(ADVANCE, { seconds: 7200 });
    const after = Date.now();
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.advanced_seconds).toBe(7200);
    const testClock = Date.parse(answer.body.test_clock);
    expect(testClock).toBeGreaterThanOrEqual(before + 2 * HOUR - 1000);
    expect(testClock).toBeLessThanOrEqual(after + 2 * HOUR + 1000);

    // Due by the new test time: run, and gone, when the call returns (the chain's follow-ups too).
    expect(ran).toEqual(['test:1h']);
    expect(await jobRow(dueIn1h)).toBeUndefined();
    expect(await jobRow(chainStart)).toBeUndefined();
    expect(chainSeen.map((s) => s.step)).toEqual([1, 2, 3]);
    for (const seen of chainSeen) {
      // The handler's mode clock is the advanced test clock.
      expect(seen.testNow - seen.realNow).toBeGreaterThanOrEqual(2 * HOUR - 1000);
      expect(seen.testNow - seen.realNow).toBeLessThanOrEqual(2 * HOUR + 1000);
    }
    // Every due job ran before the answer (above). The count is of those the call ran or waited for:
    // the server's own poll loop, woken by the advance's commit, may have finished some of the four
    // (the 1 h job and the chain's three steps) before the call looked.
    expect(answer.body.jobs_run).toBeLessThanOrEqual(4);

    // Not yet due: moved earlier by exactly the advance, still pending.
    expect((await jobRow(dueIn3h))?.due_at).toBe(threeHourDueAt - 7200 * 1000);
    // Live jobs and other accounts are untouched.
    expect(await jobRow(liveIn1h)).toMatchObject({ due_at: liveDueAt, attempts: 0, locked_until: null });
    expect(await jobRow(otherAccount)).toMatchObject({ attempts: 0, locked_until: null });

    const offset = await server.server.services.db.kysely
      .selectFrom('accounts')
      .select('test_clock_offset_ms')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(offset.test_clock_offset_ms)).toBe(7200 * 1000);

    // A further hour: the 3-hour job falls due; the clock keeps adding up.
    const again = await test.post<Advanced>(ADVANCE, { seconds: 3600 });
    expect(again.status, again.text).toBe(200);
    expect(Date.parse(again.body.test_clock) - Date.now()).toBeGreaterThan(3 * HOUR - 5000);
    expect(Date.parse(again.body.test_clock) - Date.now()).toBeLessThan(3 * HOUR + 5000);
    expect(ran).toEqual(['test:1h', 'test:3h']);
    expect(await jobRow(dueIn3h)).toBeUndefined();
    expect(await jobRow(liveIn1h)).toBeDefined();
  });

  it('writes an audit entry in test mode', async () => {
    const audit = await test.get<{
      entries: { action: string; resource_type: string; resource_id: string }[];
    }>('/v1/audit');
    expect(audit.status).toBe(200);
    expect(audit.body.entries[0]).toMatchObject({
      action: 'test_clock.advance',
      resource_type: 'account',
      resource_id: accountId,
    });
  });
});
