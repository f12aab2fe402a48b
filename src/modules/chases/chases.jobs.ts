import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * Sends (or skips, or records as bounced) one chase when it falls due. Subject: `<intake id>/chase/<chase id>`.
 * At most once: a job whose earlier run may have sent the reminder is given up and the chase recorded
 * failed, never sent twice. A run that fails before its send (a database error while reading) is
 * retried after the engine's backoff; a transient failure of the send itself, with nothing delivered,
 * is a new job after a backoff.
 */
export const DISPATCH_CHASE = defineJob('dispatch_chase', z.object({ chase_id: z.string() }), {
  atMostOnce: true,
  // Cut short by a shutdown before the send begins (reading, rendering): handed back, sent later.
  marksIrreversible: true,
  // The provider's own time-outs (SMTP 10 s to connect and 30 s of silence, SMS 15 s) end a send first.
  timeoutMs: 60_000,
});

export function chaseSubject(intakeId: string, chaseId: string): string {
  return `${intakeId}/chase/${chaseId}`;
}

/** The intake named by a chase's subject (chaseSubject), when it is one. */
export function intakeOfChaseSubject(subject: string, chaseId: string): string | undefined {
  const suffix = `/chase/${chaseId}`;
  return subject.endsWith(suffix) && subject.length > suffix.length
    ? subject.slice(0, -suffix.length)
    : undefined;
}

/** Fires intake.overdue when the due date has passed with required items missing. Subject: `<intake id>/overdue`. */
export const INTAKE_OVERDUE = defineJob(
  'intake_overdue',
  z.object({ intake_id: z.string(), due_date: z.string() }),
);

export function overdueSubject(intakeId: string): string {
  return `${intakeId}/overdue`;
}
