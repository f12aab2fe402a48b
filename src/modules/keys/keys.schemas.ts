import { z } from 'zod';
import { SCOPES } from '../../domain/scopes.js';
import { Timestamp, optional } from '../../http/schemas.js';

export const KeyMode = z.enum(['live', 'test']);

export const CreateKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .meta({ examples: ['CI pipeline'] }),
  mode: optional(KeyMode).meta({ description: 'live or test; defaults to the mode of the calling key' }),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1)
    .meta({ description: 'admin includes every other scope', examples: [['intakes:read', 'intakes:write']] }),
});

export const ApiKey = z
  .object({
    id: z.string().regex(/^key_/),
    name: z.string(),
    mode: KeyMode,
    scopes: z.array(z.string()),
    prefix: z.string().meta({ description: 'The first characters of the key, to recognise it' }),
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });

export const CreatedApiKey = ApiKey.omit({ last_used_at: true })
  .extend({ key: z.string().meta({ description: 'The secret key. Shown in this response only.' }) })
  .meta({ id: 'CreatedApiKey' });

export const KeyList = z.object({ keys: z.array(ApiKey) }).meta({ id: 'ApiKeyList' });

export const KeyIdParams = z.strictObject({ id: z.string().min(1) });
