import { z } from 'zod';

export const RecipientParams = z.strictObject({
  id: z.string().min(1).max(64),
  email: z.string().min(3).max(254),
});
