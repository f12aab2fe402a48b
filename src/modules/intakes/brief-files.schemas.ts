import { z } from 'zod';
import { Timestamp } from '../../http/schemas.js';

/** A file the account holder attaches to the brief, for the client to download. */
export const BriefFile = z
  .object({
    file_id: z.string(),
    name: z.string(),
    size: z.number(),
    content_type: z.string(),
    created_at: Timestamp,
    url: z.string().meta({ description: 'Signed download URL, valid 24 hours' }),
    url_expires_at: Timestamp,
  })
  .meta({ id: 'BriefFile' });

export const BriefFileList = z.object({ files: z.array(BriefFile) }).meta({ id: 'BriefFileList' });

export const BriefFileParams = z.strictObject({
  id: z.string().min(1).max(64),
  file_id: z.string().min(1).max(64),
});
