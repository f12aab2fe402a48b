/**
 * A worker process for the crash test (test/webhooks-delivery.test.ts): the `worker` role on the
 * database the environment names (with the short JOB_LEASE_MS the test gives it, so that a takeover
 * after SIGKILL comes within seconds). Prints "ready" once polling.
 */
import { loadConfig } from '../../src/config.js';
import { startWorker } from '../../src/server.js';
import { tuneWebhookDelivery } from '../../src/modules/webhooks/attempt.js';

const config = loadConfig();
const running = await startWorker(config);
tuneWebhookDelivery(running.services, {
  timeoutMs: Number(process.env.TEST_WEBHOOK_TIMEOUT_MS ?? 30_000),
});
process.stdout.write('ready\n');

// Never outlive the test that started us (it normally kills us with SIGKILL).
const parent = process.ppid;
setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    process.exit(0);
  }
}, 1_000).unref();
