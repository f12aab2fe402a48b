import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tuneWebhookDelivery } from '../src/modules/webhooks/attempt.js';
import { verifySignature } from '../src/modules/webhooks/verify.js';
import { DATABASES, childEnv } from './helpers/env.js';
import { client, type Client } from './helpers/http.js';
import {
  answer,
  eventually,
  failingTimes,
  hanging,
  sleep,
  startReceiver,
  type Receiver,
} from './helpers/receivers.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Body = Record<string, unknown>;
interface Attempt {
  id: string;
  delivery_id: string;
  attempt: number;
  requested_at: string;
  duration_ms: number;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  outcome: string;
  next_attempt_at: string | null;
  delivery_status: string;
}
interface Endpoint {
  id: string;
  secret: string;
  status: string;
  disabled_reason: string | null;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** SPEC: the delay before attempts 2…7, each after the previous failure. */
const SCHEDULE_MS = [MINUTE, 5 * MINUTE, 25 * MINUTE, 2 * HOUR, 12 * HOUR, 12 * HOUR];
/** The shortened timeout of these tests (30 s in production). */
const TIMEOUT_MS = 3_000;

describe.each(DATABASES)(
  'webhook delivery: retries, 410, redirects, isolation and crashes on %s',
  (database) => {
    let server: TestServer;
    let test: Client;
    let live: Client;
    const receivers: Receiver[] = [];

    beforeAll(async () => {
      server = await startTestServer(database);
      tuneWebhookDelivery(server.server.services, { timeoutMs: TIMEOUT_MS });
      const account = await server.createAccount({ plan: 'agency' });
      test = client(server.url, account.test_key);
      live = client(server.url, account.live_key);
    });
    afterAll(async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await server.stop();
    });

    async function receiver(behaviour: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
      const started = await startReceiver(behaviour);
      receivers.push(started);
      return started;
    }

    async function register(api: Client, url: string, events = ['intake.sent']): Promise<Endpoint> {
      const created = await api.post<Endpoint>('/v1/webhooks', { url, events });
      expect(created.status, created.text).toBe(201);
      return created.body;
    }

    async function createIntake(api: Client, name = 'Delivery test'): Promise<string> {
      const created = await api.post<Body>('/v1/intakes', {
        project_name: name,
        client: { email: 'd@example.com' },
        items: [{ key: 'note', label: 'Note', type: 'text' }],
        chase_schedule: 'off',
      });
      expect(created.status, created.text).toBe(201);
      return created.body.intake_id as string;
    }

    async function attempts(api: Client, endpointId: string): Promise<Attempt[]> {
      const page = await api.get<{ deliveries: Attempt[] }>(
        `/v1/webhooks/${endpointId}/deliveries?limit=100`,
      );
      expect(page.status, page.text).toBe(200);
      return page.body.deliveries.slice().reverse();
    }

    async function waitForAttempts(api: Client, endpointId: string, count: number, timeoutMs = 8_000) {
      return eventually(
        async () => {
          const log = await attempts(api, endpointId);
          return log.length >= count ? log : undefined;
        },
        `${count} attempts`,
        timeoutMs,
      );
    }

    async function advance(seconds: number): Promise<number> {
      const advanced = await test.post<{ test_clock: string }>('/v1/test_helpers/advance_clock', { seconds });
      expect(advanced.status, advanced.text).toBe(200);
      return Date.parse(advanced.body.test_clock);
    }

    it('reads the endpoint beside the delivery, and still makes attempts queued without it in their payload', async () => {
      const failing = await receiver(answer(503, 'unavailable'));
      const endpoint = await register(test, failing.url);
      await createIntake(test, 'Older attempt jobs');
      await waitForAttempts(test, endpoint.id, 1);
      const db = server.server.services.db.kysely;
      const pendingJob = () =>
        db
          .selectFrom('jobs')
          .select(['id', 'payload'])
          .where('kind', '=', 'webhook.attempt')
          .where('concurrency_key', '=', endpoint.id)
          .executeTakeFirstOrThrow();
      const queued = await pendingJob();
      const payload = JSON.parse(queued.payload) as Record<string, unknown>;
      expect(payload).toMatchObject({ attempt: 2, endpoint_id: endpoint.id });
      // As a job queued by an earlier version: no endpoint in its payload.
      delete payload.endpoint_id;
      await db
        .updateTable('jobs')
        .set({ payload: JSON.stringify(payload) })
        .where('id', '=', queued.id)
        .execute();
      await advance(6 * 60);
      const log = await waitForAttempts(test, endpoint.id, 2);
      expect(log[1]).toMatchObject({ attempt: 2, outcome: 'failed', response_status: 503 });
    });

    it("retries on SPEC's schedule to the minute under the test clock, then marks the delivery failed", async () => {
      const failing = await receiver(answer(503, 'unavailable'));
      const endpoint = await register(test, failing.url);
      await createIntake(test);
      let log = await waitForAttempts(test, endpoint.id, 1);
      for (const [index, delay] of SCHEDULE_MS.entries()) {
        const last = log[index] as Attempt;
        expect(last).toMatchObject({
          attempt: index + 1,
          outcome: 'failed',
          response_status: 503,
          delivery_status: 'pending',
        });
        expect(last.response_excerpt).toBe('unavailable');
        const next = Date.parse(last.next_attempt_at ?? '');
        // Timed from the failed attempt, with at most 5 s of jitter (1 s of slack for the request itself).
        const failedAt = Date.parse(last.requested_at) + last.duration_ms;
        expect(next - failedAt).toBeGreaterThanOrEqual(delay - 1_000);
        expect(next - failedAt).toBeLessThanOrEqual(delay + 5_000 + 1_000);
        // Up to 3 s before it is due: nothing. (Advancing 1 s first tells the test clock's time.)
        const now = await advance(1);
        await advance(Math.max(1, Math.floor((next - now) / 1000) - 3));
        await sleep(400);
        expect(await attempts(test, endpoint.id)).toHaveLength(index + 1);
        // Then past it: the attempt comes, at the time it was due.
        await advance(4);
        log = await waitForAttempts(test, endpoint.id, index + 2);
        const made = log[index + 1] as Attempt;
        expect(made.attempt).toBe(index + 2);
        expect(Date.parse(made.requested_at) - next).toBeGreaterThanOrEqual(0);
        expect(Date.parse(made.requested_at) - next).toBeLessThan(5_000);
      }
      const final = log[6] as Attempt;
      expect(final).toMatchObject({
        attempt: 7,
        outcome: 'failed',
        next_attempt_at: null,
        delivery_status: 'failed',
      });
      expect(log.every((a) => a.delivery_status === 'failed')).toBe(true);
      await advance(48 * 3600);
      await sleep(300);
      expect(failing.requests).toHaveLength(7);
      // Every attempt is signed afresh and numbered.
      for (const [index, request] of failing.requests.entries()) {
        expect(request.headers['x-service-attempt']).toBe(String(index + 1));
        expect(
          verifySignature(request.body, request.headers['service-signature'] as string, endpoint.secret),
        ).toBe(true);
      }
      const jobs = await server.server.services.db.kysely
        .selectFrom('jobs')
        .select('id')
        .where('subject_id', '=', final.delivery_id)
        .execute();
      expect(jobs).toEqual([]);
    });

    it('logs an attempt whose job another worker took over while it was out, then the takeover’s attempt', async () => {
      const db = server.server.services.db.kysely;
      let endpointId = '';
      const attemptJob = () =>
        db
          .updateTable('jobs')
          .where('kind', '=', 'webhook.attempt')
          .where('concurrency_key', '=', endpointId);
      const stealing = await receiver((n, request, response) => {
        if (n > 1) return answer(200)(n, request, response);
        // While this request is out, another worker holds the job (its own lease on the row), as after
        // this worker stalled past its lease.
        void attemptJob()
          .set((eb) => ({ locked_until: eb('locked_until', '+', 1) }))
          .execute()
          .then(() => answer(200)(n, request, response));
        return 'hang';
      });
      const endpoint = await register(test, stealing.url);
      endpointId = endpoint.id;
      await createIntake(test, 'Taken over');
      const [first] = await waitForAttempts(test, endpoint.id, 1);
      expect(first).toMatchObject({
        attempt: 1,
        outcome: 'succeeded',
        response_status: 200,
        next_attempt_at: null,
        delivery_status: 'pending',
      });
      // The other worker dies in turn: once its lease has run out, the attempt is made again and settles.
      await attemptJob().set({ locked_until: 0 }).execute();
      const log = await waitForAttempts(test, endpoint.id, 2);
      expect(log.map((a) => [a.attempt, a.outcome, a.response_status])).toEqual([
        [1, 'succeeded', 200],
        [1, 'succeeded', 200],
      ]);
      expect(log.every((a) => a.delivery_status === 'succeeded')).toBe(true);
      expect(stealing.requests).toHaveLength(2);
    });

    it('succeeds on a later attempt when the endpoint recovers', async () => {
      const flaky = await receiver(failingTimes(2));
      const endpoint = await register(test, flaky.url);
      await createIntake(test);
      await waitForAttempts(test, endpoint.id, 1);
      await advance(66);
      await waitForAttempts(test, endpoint.id, 2);
      await advance(5 * 60 + 6);
      const log = await waitForAttempts(test, endpoint.id, 3);
      expect(log.map((a) => [a.attempt, a.outcome, a.response_status])).toEqual([
        [1, 'failed', 500],
        [2, 'failed', 500],
        [3, 'succeeded', 200],
      ]);
      expect(log.every((a) => a.delivery_status === 'succeeded')).toBe(true);
      expect(new Set(log.map((a) => a.delivery_id)).size).toBe(1);
    });

    it('deregisters an endpoint that answers 410, with every endpoint of that URL, at once', async () => {
      const gone = await receiver(answer(410, 'gone'));
      const endpoint = await register(live, gone.url);
      const twin = await register(live, gone.url, ['intake.sent', 'item.approved']);
      await createIntake(live);
      // Whichever endpoint got its answer first deregistered both (the other's delivery may be cancelled unsent).
      await eventually(async () => {
        const listed = await live.get<{ webhooks: Endpoint[] }>('/v1/webhooks');
        const ours = listed.body.webhooks.filter((w) => w.id === endpoint.id || w.id === twin.id);
        return ours.every((w) => w.status === 'disabled' && w.disabled_reason === 'gone') ? ours : undefined;
      }, 'both endpoints deregistered');
      const log = [...(await attempts(live, endpoint.id)), ...(await attempts(live, twin.id))];
      expect(log.length).toBeGreaterThanOrEqual(1);
      for (const attempt of log) {
        expect(attempt).toMatchObject({
          outcome: 'gone',
          response_status: 410,
          next_attempt_at: null,
          delivery_status: 'failed',
        });
      }
      const before = gone.requests.length;
      expect(before).toBeLessThanOrEqual(2);
      await createIntake(live, 'After the 410');
      await sleep(1_500);
      expect(gone.requests.length).toBe(before);
      const deliveries = await server.server.services.db.kysely
        .selectFrom('webhook_deliveries')
        .select(['status'])
        .where('endpoint_id', 'in', [endpoint.id, twin.id])
        .execute();
      expect(deliveries.every((d) => d.status !== 'pending')).toBe(true);
      expectError(
        await live.post(`/v1/webhooks/${endpoint.id}/test`, { event: 'intake.sent' }),
        409,
        'conflict',
      );
    });

    it('does not follow redirects (a 3xx is a failure) and caps the response excerpt', async () => {
      const target = await receiver(answer(200));
      const redirecting = await receiver(answer(302, 'moved', { location: target.url }));
      const chatty = await receiver(answer(200, 'x'.repeat(100_000)));
      const redirected = await register(live, redirecting.url);
      const verbose = await register(live, chatty.url);
      await createIntake(live);
      const [moved] = await waitForAttempts(live, redirected.id, 1);
      expect(moved).toMatchObject({ outcome: 'failed', response_status: 302, delivery_status: 'pending' });
      expect(moved?.error).toMatch(/redirect/);
      expect(target.requests).toHaveLength(0);
      const [long] = await waitForAttempts(live, verbose.id, 1);
      expect(long?.outcome).toBe('succeeded');
      expect(long?.response_excerpt).toHaveLength(4_096);
      await live.delete(`/v1/webhooks/${redirected.id}`);
      await live.delete(`/v1/webhooks/${verbose.id}`);
    });

    it('a hanging endpoint does not delay a healthy one', async () => {
      const stuck = await receiver(hanging);
      const slow = await receiver((_n, _request, response) => {
        setTimeout(() => response.end('late'), TIMEOUT_MS - 500);
        return 'hang';
      });
      const healthy = await receiver(answer(200));
      // The stuck endpoints are registered first, so their attempts come first in every batch.
      const stuckEndpoint = await register(live, stuck.url);
      await register(live, slow.url);
      const healthyEndpoint = await register(live, healthy.url);
      const started = Date.now();
      const count = 8;
      for (let i = 0; i < count; i++) await createIntake(live, `Burst ${i}`);
      const created = Date.now();
      await healthy.waitFor(count, 5_000);
      // At most 4 requests in flight to one endpoint.
      expect(stuck.requests.length).toBeLessThanOrEqual(4);
      expect(slow.requests.length).toBeLessThanOrEqual(4);
      const lastHealthy = Math.max(...healthy.requests.map((r) => r.at));
      const firstStuck = Math.min(...stuck.requests.map((r) => r.at));
      // Every healthy delivery arrived before a single hanging attempt had even timed out.
      expect(lastHealthy).toBeLessThan(firstStuck + TIMEOUT_MS);
      expect(lastHealthy - created).toBeLessThan(TIMEOUT_MS);
      const healthyLog = await waitForAttempts(live, healthyEndpoint.id, count);
      expect(healthyLog.every((a) => a.outcome === 'succeeded' && a.duration_ms < 1_000)).toBe(true);
      const stuckLog = await waitForAttempts(live, stuckEndpoint.id, 1, 10_000);
      expect(stuckLog[0]).toMatchObject({
        outcome: 'failed',
        response_status: null,
        delivery_status: 'pending',
      });
      expect(stuckLog[0]?.error).toBe(`no response within ${TIMEOUT_MS / 1000} s`);
      expect(stuckLog[0]?.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(started).toBeLessThanOrEqual(created);
    });

    it('advance_clock does not wait for a test endpoint that does not answer', async () => {
      const stuck = await receiver(hanging);
      const endpoint = await register(test, stuck.url);
      await createIntake(test, 'Hanging under the test clock');
      // The first attempt waits out the time-out and is due again a minute later (test time).
      await waitForAttempts(test, endpoint.id, 1, 10_000);
      const started = Date.now();
      await advance(2 * 60);
      // The retry that fell due is left to the workers: the advance answers without waiting for it.
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS - 1_000);
      await stuck.waitFor(2, 5_000);
      const log = await waitForAttempts(test, endpoint.id, 2, 10_000);
      expect(log[1]).toMatchObject({ attempt: 2, outcome: 'failed', response_status: null });
    });

    it('loses nothing when the worker is killed mid-delivery', async () => {
      const services = server.server.services;
      let release: (() => void) | undefined;
      const flaky = await receiver((n, _request, response) => {
        if (n === 1) {
          // The first attempt hangs; the worker making it is killed meanwhile.
          release = () => response.destroy();
          return 'hang';
        }
        response.end('ok');
      });
      const endpoint = await register(test, flaky.url);
      // Only the child process works while the first attempt is made.
      await server.server.worker.stop();
      // `node --import tsx` runs the worker in this very process, so SIGKILL kills the worker itself.
      // Its lease is short, so that the takeover after the kill comes within seconds, and renewed every
      // third of it while the request is out: 4.5 s leaves a loaded machine three seconds of stall
      // before the lease could lapse and the job be claimed a second time before the kill.
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/webhook-worker.ts'], {
        env: childEnv({ ...server.env, LOG_LEVEL: 'silent', JOB_LEASE_MS: '4500' }),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        await readyLine(child);
        const intakeId = await createIntake(test, 'Crash test');
        await flaky.waitFor(1, 15_000);
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        release?.();

        const db = services.db.kysely;
        const delivery = await db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('endpoint_id', '=', endpoint.id)
          .executeTakeFirstOrThrow();
        expect(delivery).toMatchObject({ status: 'pending', attempts: 0 });
        // Its one attempt job is there, still claimed by the dead worker: its lease will lapse.
        const pendingJobs = await db
          .selectFrom('jobs')
          .select(['kind', 'attempts', 'locked_until'])
          .where('subject_id', '=', delivery.id)
          .execute();
        expect(pendingJobs).toHaveLength(1);
        expect(pendingJobs[0]).toMatchObject({ kind: 'webhook.attempt', attempts: 1 });
        expect(pendingJobs[0]?.locked_until).not.toBeNull();

        server.server.worker.start();
        await flaky.waitFor(2, 15_000);
        const log = await waitForAttempts(test, endpoint.id, 1);
        expect(log).toHaveLength(1);
        expect(log[0]).toMatchObject({
          delivery_id: delivery.id,
          attempt: 1,
          outcome: 'succeeded',
          delivery_status: 'succeeded',
        });
        expect(JSON.parse(flaky.requests[1]?.body ?? '{}')).toMatchObject({
          event: 'intake.sent',
          intake_id: intakeId,
        });
        const left = await db
          .selectFrom('jobs')
          .select('id')
          .where('subject_id', '=', delivery.id)
          .where('locked_until', 'is', null)
          .execute();
        expect(left).toEqual([]);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        server.server.worker.start();
      }
    });
  },
);

/** Waits for the child's "ready" line. */
function readyLine(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`worker child not ready: ${text}`)), 20_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (/ready/.test(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`worker child exited with ${String(code)}: ${text}`)));
  });
}
