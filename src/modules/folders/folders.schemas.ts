import { z } from 'zod';
import { Timestamp } from '../../http/schemas.js';

const FolderName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .meta({ description: 'Shown in lists; unique per account' });

export const Folder = z
  .object({
    id: z.string().meta({ description: 'fld_…' }),
    name: z.string(),
    intake_count: z.number().meta({ description: 'Intakes filed in the folder' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Folder' });

export const FolderList = z.object({ folders: z.array(Folder) }).meta({ id: 'FolderList' });
export const CreateFolderBody = z.strictObject({ name: FolderName }).meta({ id: 'CreateFolder' });
export const UpdateFolderBody = z.strictObject({ name: FolderName }).meta({ id: 'UpdateFolder' });
export const FolderParams = z.strictObject({ id: z.string().min(1).max(64) });
