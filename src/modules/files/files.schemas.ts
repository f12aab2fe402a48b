import { z } from 'zod';
import { Timestamp } from '../../http/schemas.js';
import type { FileRow } from '../intakes/intakes.repository.js';

/** An uploaded file as the portal shows it (CONTRACT "Portal file record"). */
export const FileRecord = z
  .object({
    file_id: z.string(),
    name: z.string(),
    size: z.number(),
    content_type: z.string(),
    width: z.number().nullable(),
    height: z.number().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'FileRecord' });

/** A file in results: the record with a signed download URL instead of its upload time. */
export const ResultFile = FileRecord.omit({ created_at: true })
  .extend({ url: z.string(), url_expires_at: Timestamp })
  .meta({ id: 'ResultFile' });

export function toFileRecord(file: FileRow): z.infer<typeof FileRecord> {
  return {
    file_id: file.id,
    name: file.name,
    size: Number(file.size),
    content_type: file.content_type,
    width: file.width,
    height: file.height,
    created_at: file.created_at,
  };
}
