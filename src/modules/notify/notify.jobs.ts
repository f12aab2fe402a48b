import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/** Sends one queued message (its row says what). Subject: `<intake id>/message/<message id>`. */
export const DELIVER_MESSAGE = defineJob('deliver_message', z.object({ message_id: z.string() }));

export function messageSubject(intakeId: string, messageId: string): string {
  return `${intakeId}/message/${messageId}`;
}
