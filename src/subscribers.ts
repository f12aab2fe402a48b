import { subscribe } from './kernel/domain-events.js';
import { recordEvent } from './modules/events/events.repository.js';
import { fanOutEvent } from './modules/webhooks/webhooks.outbox.js';

/**
 * Who hears which domain event: the one place where a change in one module becomes work in another.
 * Every subscriber runs in the raising transaction. Registered once per process, when this module is
 * first imported (by the server, the worker and the CLI through server.ts).
 */
subscribe('event.emitted', async (trx, event) => {
  await recordEvent(trx, event);
});
subscribe('event.recorded', async (trx, event) => {
  await fanOutEvent(trx, event);
});
