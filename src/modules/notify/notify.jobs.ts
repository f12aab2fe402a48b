import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * Sends one queued message (its row says what). Subject: `<intake id>/message/<message id>`.
 * At most once: a relay's acceptance cannot be made idempotent, so a job whose earlier run may have
 * reached the relay (its worker died, or it failed mid-send) is given up and the message recorded
 * failed, never sent again. A run that fails before its send (a database error while reading) is
 * retried after the engine's backoff; a transient failure of the send itself, with nothing delivered,
 * is a new job after a backoff.
 */
export const DELIVER_MESSAGE = defineJob('deliver_message', z.object({ message_id: z.string() }), {
  atMostOnce: true,
  // Cut short by a shutdown before the send begins (reading, rendering): handed back, sent later.
  marksIrreversible: true,
  // SMTP's own time-outs (10 s to connect, 30 s of silence) end a send first; the lease is renewed meanwhile.
  timeoutMs: 60_000,
});

export function messageSubject(intakeId: string, messageId: string): string {
  return `${intakeId}/message/${messageId}`;
}
