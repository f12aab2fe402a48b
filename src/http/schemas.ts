import { z } from 'zod';
import { ERROR_STATUS } from './errors.js';

/** The one error envelope. */
export const ErrorBody = z
  .object({
    error: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
    message: z.string(),
    request_id: z.string().regex(/^req_/),
  })
  .loose()
  .meta({
    id: 'Error',
    description: 'Every error answer has this shape.',
    examples: [
      { error: 'not_found', message: 'No api_key with id key_123.', request_id: 'req_8fJk2Lm9QzX1' },
    ],
  });

/**
 * An optional request field: `null` means the same as leaving it out (CONTRACT "Shapes").
 */
export function optional<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((value) => value ?? undefined);
}

export const Timestamp = z.iso.datetime().meta({ description: 'ISO 8601 timestamp in UTC' });

/** A BCP 47 language tag, kept in its canonical form. */
export const LanguageTag = z
  .string()
  .min(2)
  .max(35)
  .superRefine((tag, ctx) => {
    try {
      Intl.getCanonicalLocales(tag);
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: `"${tag}" is not a valid BCP 47 language tag (e.g. en, fr-CA)`,
      });
    }
  })
  .transform((tag) => Intl.getCanonicalLocales(tag)[0] ?? tag)
  .meta({ description: 'BCP 47 language tag', examples: ['en', 'fr-CA'] });

export const PageLimit = (max: number, fallback: number) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max, { message: `limit must be at most ${max}` })
    .default(fallback);
