import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import type { DecidedBy } from '../../domain/decisions.js';
import { isFileType, isOwnerItem } from '../../domain/items.js';
import { ApiError } from '../../http/errors.js';
import type { Comment } from '../../domain/comments.js';
import { ask } from '../../kernel/domain-events.js';
import { decryptSecret, deriveKey } from '../../lib/crypto.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { AppServices } from '../../services.js';
import { toFileRecord } from '../files/files.schemas.js';
import { signFileUrl } from '../files/signed-url.js';
import {
  applicableItemKeys,
  filesOf,
  itemsOf,
  updateIntake,
  updateItem,
  type FileRow,
  type IntakeRow,
  type ItemRow,
} from './intakes.repository.js';
import { RETENTION_PURGE } from './intakes.jobs.js';
import type { ResultItem, Results } from './intakes.schemas.js';
import { requireIntake } from './intakes.service.js';
import { requireItem, withLockedIntake } from './review.service.js';
import { realTimeOf, type World } from '../../kernel/world.js';

const ON_DELIVERY_DELAY_MS = 24 * 60 * 60 * 1000;

declare module '../../kernel/domain-events.js' {
  interface DomainQueryMap {
    /** An intake's comments, oldest first (the comments module, above this one, owns them). */
    intakeComments: { input: { intake: IntakeRow }; output: Comment[] };
  }
}

export function secretKeyOf(services: AppServices): Buffer {
  return deriveKey(services.config.secretKey, 'secret-items');
}

export function secretContext(intakeId: string, key: string): string {
  return `${intakeId}/${key}`;
}

function fileValue(services: AppServices, files: FileRow[]) {
  const now = services.clock.now().getTime();
  return {
    files: files.map((file) => {
      const { created_at: _uploaded, ...record } = toFileRecord(file);
      const signed = signFileUrl(services.config.baseUrl, services.config.secretKey, file.id, now);
      return { ...record, url: signed.url, url_expires_at: signed.expires_at };
    }),
  };
}

export interface ResultsOptions {
  onlyNew: boolean;
  includePending: boolean;
  canReadSecrets: boolean;
}

/**
 * GET /v1/intakes/:id/results. Every call moves the intake's cursor past the approvals it could see,
 * under the intake's lock, so concurrent only_new callers never receive the same approval twice.
 * A secret is revealed once, to a key with secrets:read.
 */
export async function collectResults(
  services: AppServices,
  world: World,
  id: string,
  options: ResultsOptions,
): Promise<z.infer<typeof Results>> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  return withLockedIntake(db, found, async (trx, intake) => {
    const items = await itemsOf(trx, intake.id);
    // An item an earlier answer hides is not part of the answer (its saved value stays, should it apply again).
    const applies = applicableItemKeys(items);
    const chosen = items.filter((item) => {
      if (!applies.has(item.key)) return false;
      if (item.status === 'approved')
        return !options.onlyNew || (item.approval_seq ?? 0) > intake.results_cursor;
      if (!options.includePending) return false;
      // An open decision waits for a person: shown with its proposal, so the agent knows what is asked.
      return item.status === 'submitted' || (item.status === 'pending' && isOwnerItem(item.definition));
    });
    const now = world.clock.now();
    const comments = chosen.length > 0 ? await ask(trx, 'intakeComments', { intake }) : [];
    const results: z.infer<typeof ResultItem>[] = [];
    for (const item of chosen) {
      const answer = await resultOf(services, trx, intake, item, options, now);
      results.push({ ...answer, comments: comments.filter((c) => c.item_key === item.key) });
    }
    await advanceCursor(trx, world, intake, now);
    return { intake_id: intake.id, status: intake.status, items: results };
  });
}

async function resultOf(
  services: AppServices,
  trx: Kysely<Database>,
  intake: IntakeRow,
  item: ItemRow,
  options: ResultsOptions,
  now: Date,
): Promise<Omit<z.infer<typeof ResultItem>, 'comments'>> {
  const def = item.definition;
  const base = {
    key: item.key,
    type: def.type,
    status: item.status,
    submitted_at: item.submitted_at,
    approved_at: item.approved_at,
    // Decisions say who answered: a person (owner) or the adopted proposal (decisions.service.ts).
    ...(isOwnerItem(def) ? { decided_by: (item.decided_by ?? null) as DecidedBy | null } : {}),
    ...(isOwnerItem(def) && item.status === 'pending' ? { proposed: def.proposed ?? null } : {}),
  };
  if (isFileType(def.type))
    return { ...base, value: fileValue(services, await filesOf(trx, intake.id, item.key)) };
  if (def.type === 'secret') {
    // A null value alone cannot be told from an empty one: the answer names why it is withheld.
    if (!options.canReadSecrets) {
      return { ...base, value: null, revealed_at: item.secret_revealed_at, withheld: 'secrets:read' };
    }
    if (item.secret_revealed_at) {
      return { ...base, value: null, revealed_at: item.secret_revealed_at, withheld: 'revealed' };
    }
    if (!item.secret_ciphertext) return { ...base, value: null, revealed_at: null };
    const value = decryptSecret(
      secretKeyOf(services),
      item.secret_ciphertext,
      secretContext(intake.id, item.key),
    );
    await updateItem(trx, intake.id, item.key, { secret_revealed_at: now.toISOString() });
    return { ...base, value, revealed_at: now.toISOString() };
  }
  return {
    ...base,
    value: item.value as z.infer<typeof ResultItem>['value'],
  };
}

async function advanceCursor(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  now: Date,
): Promise<void> {
  const firstCollection = intake.status === 'completed' && intake.results_collected_at === null;
  await updateIntake(trx, intake.id, {
    results_cursor: intake.approval_counter,
    ...(firstCollection ? { results_collected_at: now.toISOString() } : {}),
  });
  if (firstCollection && intake.retention_mode === 'on_delivery') {
    await enqueueJob(trx, {
      accountId: world.accountId,
      livemode: world.livemode,
      kind: RETENTION_PURGE.kind,
      subjectId: intake.id,
      payload: { intake_id: intake.id, reason: 'on_delivery' },
      dueAt: realTimeOf(world, now.getTime() + ON_DELIVERY_DELAY_MS),
    });
  }
}

/** GET /v1/intakes/:id/items/:key/secret: the secret once; 410 gone after its first reveal. */
export async function revealSecret(services: AppServices, world: World, id: string, key: string) {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, id);
  return withLockedIntake(db, found, async (trx, intake) => {
    const item = await requireItem(trx, intake, key);
    if (item.definition.type !== 'secret')
      throw new ApiError('unprocessable', `Item ${key} is not a secret item.`);
    if (item.secret_revealed_at) {
      throw new ApiError(
        'gone',
        `The secret of ${key} was revealed at ${item.secret_revealed_at} and is no longer available.`,
      );
    }
    if (!item.secret_ciphertext || (item.status !== 'submitted' && item.status !== 'approved')) {
      throw new ApiError('conflict', `The client has not submitted ${key} yet.`);
    }
    const value = decryptSecret(secretKeyOf(services), item.secret_ciphertext, secretContext(intake.id, key));
    const now = world.clock.now().toISOString();
    await updateItem(trx, intake.id, key, { secret_revealed_at: now });
    return { intake_id: intake.id, item_key: key, value, revealed_at: now };
  });
}
