import type { Migration, MigrationProvider } from 'kysely';
import { foundation } from './0001_foundation.js';
import { intakes } from './0002_intakes.js';

/** Migrations in order; names sort in the order they must run. Never edit one that has shipped. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_intakes': intakes,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
