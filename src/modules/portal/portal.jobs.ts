import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * An unfinished tus upload may be resumed for a day after it began (tus announces it in
 * Upload-Expires); after that the sweep_abandoned_uploads job removes it.
 */
export const TUS_EXPIRE_AFTER_MS = 24 * 60 * 60 * 1000;

/** Retention: unfinished tus uploads begun more than TUS_EXPIRE_AFTER_MS ago (recurring, system). */
export const SWEEP_ABANDONED_UPLOADS = defineJob('sweep_abandoned_uploads', z.object({}).strict());
