import { z } from 'zod';
import { CHASE_CHANNELS, MAX_REMINDERS_LIMIT } from '../../domain/chases.js';
import { optional } from '../../http/schemas.js';

/** Chase settings accepted at creation (and by PATCH /v1/intakes/:id), beside chase_schedule. */
export const ChaseSettingsFields = {
  chase_interval: optional(z.number().int().positive().max(8760)).meta({
    description: 'chase_schedule custom: time between reminders, in chase_interval_unit (at least 1 hour).',
  }),
  chase_interval_unit: optional(z.enum(['hours', 'days'])).meta({
    description: 'Unit of chase_interval (default days).',
  }),
  max_reminders: optional(z.number().int().min(0).max(MAX_REMINDERS_LIMIT)).meta({
    description: `Scheduled reminders at most (default 10, at most ${MAX_REMINDERS_LIMIT}).`,
  }),
  respect_quiet_hours: optional(z.boolean()).meta({
    description:
      "Default true: with the client's time zone known, no reminder between 20:00 and 08:00 local (moved to 09:00).",
  }),
  chase_at_time: optional(z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'chase_at_time must be HH:MM')).meta({
    description: 'Reminders go out at this local time (client.timezone; UTC when unknown) on their day.',
  }),
};

export const ChaseBody = z
  .strictObject({
    channel: optional(z.enum(CHASE_CHANNELS)).meta({ description: 'email (default) or sms' }),
  })
  .nullish();
