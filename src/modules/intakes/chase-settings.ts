/**
 * An intake's chase settings: the request fields that set them (at creation and in PATCH) and their
 * check against each other and the account's plan. They are part of the intake's definition; the chases
 * module plans reminders from the values.
 */
import { z } from 'zod';
import {
  DEFAULT_MAX_REMINDERS,
  MAX_CUSTOM_INTERVAL_MINUTES,
  MAX_REMINDERS_LIMIT,
  MIN_CUSTOM_INTERVAL_MINUTES,
} from '../../domain/chases.js';
import { planOf } from '../../domain/plans.js';
import { ApiError } from '../../http/errors.js';
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

export interface ChaseSettingsInput {
  chase_schedule?: string | undefined;
  chase_interval?: number | undefined;
  chase_interval_unit?: 'hours' | 'days' | undefined;
  max_reminders?: number | undefined;
  respect_quiet_hours?: boolean | undefined;
  chase_at_time?: string | undefined;
}

export interface ChasePlanValues {
  interval_minutes: number | null;
  max_reminders: number;
  respect_quiet_hours: number;
  chase_at_time: string | null;
}

/** Checks chase settings against each other and the plan: 422 when inconsistent, 402 when custom needs a plan. */
export function chasePlanValues(input: ChaseSettingsInput, planId: string): ChasePlanValues {
  const schedule = input.chase_schedule ?? 'default';
  let intervalMinutes: number | null = null;
  if (schedule === 'custom') {
    if (input.chase_interval === undefined) {
      throw new ApiError('unprocessable', 'chase_interval: required with chase_schedule custom.');
    }
    const plan = planOf(planId);
    if (!plan.features.custom_chase_schedules) {
      throw new ApiError(
        'plan_required',
        `Custom chase schedules are not part of the ${plan.name} plan; upgrade to use chase_schedule custom.`,
      );
    }
    intervalMinutes = input.chase_interval * ((input.chase_interval_unit ?? 'days') === 'hours' ? 60 : 1440);
    if (intervalMinutes < MIN_CUSTOM_INTERVAL_MINUTES || intervalMinutes > MAX_CUSTOM_INTERVAL_MINUTES) {
      throw new ApiError('unprocessable', 'chase_interval: must be between 1 hour and 90 days.');
    }
  } else if (input.chase_interval !== undefined || input.chase_interval_unit !== undefined) {
    throw new ApiError('unprocessable', 'chase_interval applies to chase_schedule custom only.');
  }
  return {
    interval_minutes: intervalMinutes,
    max_reminders: input.max_reminders ?? DEFAULT_MAX_REMINDERS,
    respect_quiet_hours: input.respect_quiet_hours === false ? 0 : 1,
    chase_at_time: input.chase_at_time ?? null,
  };
}
