import { z } from 'zod';
import { NOTICE_FREQUENCIES } from '../../domain/owner-notices.js';
import { TimeZone } from '../intakes/intakes.schemas.js';

/** A person's notification choice, as the dashboard's settings form sends it. */
export const NoticeSettingForm = z.strictObject({
  frequency: z.enum(NOTICE_FREQUENCIES),
  /** IANA time zone of the daily digest; null: UTC. */
  time_zone: TimeZone.nullable(),
});
