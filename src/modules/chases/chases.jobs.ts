import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/** Sends (or skips, or records as bounced) one chase when it falls due. Subject: `<intake id>/chase/<chase id>`. */
export const DISPATCH_CHASE = defineJob('dispatch_chase', z.object({ chase_id: z.string() }));

export function chaseSubject(intakeId: string, chaseId: string): string {
  return `${intakeId}/chase/${chaseId}`;
}

/** Fires intake.overdue when the due date has passed with required items missing. Subject: `<intake id>/overdue`. */
export const INTAKE_OVERDUE = defineJob(
  'intake_overdue',
  z.object({ intake_id: z.string(), due_date: z.string() }),
);

export function overdueSubject(intakeId: string): string {
  return `${intakeId}/overdue`;
}
