import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import type { AppServices } from '../../services.js';
import { signFileUrl } from '../files/signed-url.js';
import type { BriefFile } from './brief-files.schemas.js';
import { filesOf } from './intakes.repository.js';

/** The reserved item key brief files are stored under (never an item's: keys match ^[a-z]…). */
export const BRIEF_FILES_KEY = '_brief';

/** Signs download links for an intake's brief files (the portal view and the owner's list). */
export async function briefFileLinks(
  services: Pick<AppServices, 'config' | 'clock'>,
  db: Kysely<Database>,
  intakeId: string,
): Promise<z.infer<typeof BriefFile>[]> {
  const now = services.clock.now().getTime();
  return (await filesOf(db, intakeId, BRIEF_FILES_KEY)).map((file) => {
    const signed = signFileUrl(services.config.baseUrl, services.config.secretKey, file.id, now);
    return {
      file_id: file.id,
      name: file.name,
      size: Number(file.size),
      content_type: file.content_type,
      created_at: file.created_at,
      url: signed.url,
      url_expires_at: signed.expires_at,
    };
  });
}
