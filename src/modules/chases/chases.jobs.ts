import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/** Sends (or skips, or records as bounced) one chase when it falls due. Subject: `<intake id>/chase/<chase id>`. */
export const DISPATCH_CHASE = defineJob('dispatch_chase', z.object({ chase_id: z.string() }));

export function chaseSubject(intakeId: string, chaseId: string): string {
  return `${intakeId}/chase/${chaseId}`;
}
