/**
 * What a reminder's dispatch reads before it decides and renders, for reminders that start together:
 * a worker starts the reminders one claim took in the same pass, so their intakes (with their clients'
 * suppressions), plans, items, files and senders, and on SQLite their chases, are read with one
 * statement per kind of row for all of them (BatchLoader), one round trip on PostgreSQL instead of one
 * per reminder. (On PostgreSQL each chase is read after its intake's lock, in a statement of its own
 * beside these: findChaseAfterIntakeLock.) Nothing is kept between passes: each dispatch reads the
 * database as it is when it starts.
 */
import { BatchLoader } from '../../lib/batch-loader.js';
import type { AppServices } from '../../services.js';
import {
  filesByIntake,
  findIntakesWithSuppression,
  itemsByIntake,
  type FileRow,
  type IntakeWithSuppression,
  type ItemRow,
} from '../intakes/intakes.service.js';
import { sendersAndBrandingOf, suppressedAmong, type ContextReads } from '../notify/notify.service.js';
import { findChasesByIds, findPlansOf, type ChasePlanRow, type ChaseRow } from './chases.repository.js';

export interface DispatchLoaders {
  /** SQLite's: PostgreSQL reads each chase after its intake's lock (findChaseAfterIntakeLock). */
  chases: BatchLoader<ChaseRow>;
  /** An intake, with whether its client's address is suppressed when that could be read with it. */
  intakes: BatchLoader<IntakeWithSuppression>;
  plans: BatchLoader<ChasePlanRow>;
  /** An intake's items in order (none: no entry). */
  items: BatchLoader<ItemRow[]>;
  /** An intake's files (none: no entry). */
  files: BatchLoader<FileRow[]>;
  /** An account's sender and branding (every account asked for has one). */
  senders: BatchLoader<Omit<ContextReads, 'files'>>;
  /**
   * Whether an address is suppressed for a tenant, keyed by suppressionKey: for a client's address
   * that could not be read with its intake (one with other than ASCII characters).
   */
  suppressed: BatchLoader<true>;
}

const loaders = new WeakMap<AppServices, DispatchLoaders>();

/** The dispatch loaders of these services (one set per process), created on first use. */
export function dispatchLoaders(services: AppServices): DispatchLoaders {
  let found = loaders.get(services);
  if (!found) {
    const db = services.db.kysely;
    found = {
      chases: new BatchLoader((ids) => findChasesByIds(db, ids)),
      intakes: new BatchLoader((ids) => findIntakesWithSuppression(db, ids)),
      plans: new BatchLoader((ids) => findPlansOf(db, ids)),
      items: new BatchLoader((ids) => itemsByIntake(db, ids)),
      files: new BatchLoader((ids) => filesByIntake(db, ids)),
      senders: new BatchLoader((ids) => sendersAndBrandingOf(services, db, ids)),
      suppressed: new BatchLoader((keys) => suppressedByKey(services, keys)),
    };
    loaders.set(services, found);
  }
  return found;
}

/** The key of the suppressed loader: an address of a tenant (account and mode). */
export function suppressionKey(accountId: string, livemode: boolean, address: string): string {
  return JSON.stringify([accountId, livemode, address.toLowerCase()]);
}

/** The suppressed addresses among these keys, one statement per tenant. */
async function suppressedByKey(services: AppServices, keys: string[]): Promise<Map<string, true>> {
  const byTenant = new Map<string, { accountId: string; livemode: boolean; addresses: string[] }>();
  for (const key of keys) {
    const [accountId, livemode, address] = JSON.parse(key) as [string, boolean, string];
    const tenant = JSON.stringify([accountId, livemode]);
    const entry = byTenant.get(tenant) ?? { accountId, livemode, addresses: [] };
    entry.addresses.push(address);
    byTenant.set(tenant, entry);
  }
  const found = new Map<string, true>();
  await Promise.all(
    [...byTenant.values()].map(async ({ accountId, livemode, addresses }) => {
      const suppressed = await suppressedAmong(services.db.kysely, { accountId, livemode }, addresses);
      for (const address of suppressed) found.set(suppressionKey(accountId, livemode, address), true);
    }),
  );
  return found;
}
