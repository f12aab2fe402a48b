import { z } from 'zod';
import { defineJob } from '../../jobs/jobs.js';

/**
 * Retention: expired OAuth codes, refresh tokens, device authorizations and access tokens, and the
 * dashboard's expired sign-in links and sessions (recurring, system).
 */
export const SWEEP_EXPIRED_AUTH = defineJob('sweep_expired_auth', z.object({}).strict());
