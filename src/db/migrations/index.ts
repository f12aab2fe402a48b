import type { Migration, MigrationProvider } from 'kysely';
import { foundation } from './0001_foundation.js';
import { intakes } from './0002_intakes.js';
import { webhooks } from './0003_webhooks.js';
import { notifications } from './0004_notifications.js';
import { portal } from './0005_portal.js';

/** Migrations in order; names sort in the order they must run. Never edit one that has shipped. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_intakes': intakes,
  '0003_webhooks': webhooks,
  '0004_notifications': notifications,
  '0005_portal': portal,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
