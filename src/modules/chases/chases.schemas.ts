import { z } from 'zod';
import { CHASE_CHANNELS } from '../../domain/chases.js';
import { optional } from '../../http/schemas.js';

export const ChaseBody = z
  .strictObject({
    channel: optional(z.enum(CHASE_CHANNELS)).meta({ description: 'email (default) or sms' }),
  })
  .nullish();
