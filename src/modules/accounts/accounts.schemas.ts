import { z } from 'zod';
import { PLAN_IDS } from '../../domain/plans.js';
import { LanguageTag, Timestamp, optional } from '../../http/schemas.js';
import { BrandingSettings } from './branding.js';

export const Account = z
  .object({
    id: z.string().regex(/^acct_/),
    name: z.string(),
    email: z.string(),
    plan: z.enum(PLAN_IDS),
    default_language: z.string(),
    rate_limit_per_hour: z
      .number()
      .int()
      .meta({ description: "Requests per hour per API key (the plan's, or a contract override)" }),
    livemode: z.boolean().meta({ description: 'Whether the calling key is a live key' }),
    created_at: Timestamp,
    branding: z.object({ logo_url: z.string().nullable(), accent_color: z.string().nullable() }).meta({
      description: "The client portal's logo and accent colour (shown on plans with custom_branding)",
    }),
  })
  .meta({ id: 'Account' });

export const PatchAccountBody = z
  .strictObject({
    name: optional(z.string().trim().min(1).max(200)),
    default_language: optional(LanguageTag),
    branding: optional(BrandingSettings),
  })
  .meta({ description: 'Only the fields given are changed.' });

export const CreateAccountInput = z.object({
  email: z.email(),
  name: z.string().trim().min(1).max(200).optional(),
  plan: z.enum(PLAN_IDS).default('free'),
  rateLimitPerHour: z.number().int().positive().optional(),
});
