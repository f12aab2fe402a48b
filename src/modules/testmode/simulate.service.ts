import { Readable } from 'node:stream';
import { isFileType } from '../../domain/items.js';
import { syntheticFilePlan, syntheticValue } from '../../domain/synthetic.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { clientItems, filesOf, itemsOf } from '../intakes/intakes.service.js';
import { simulateBounce } from '../chases/chases.service.js';
import { getIntakeStatus, requireIntake } from '../intakes/intakes.service.js';
import type { World } from '../../kernel/world.js';
import { recordView, removeFile, saveValue, submitItem, uploadFile } from '../portal/portal.service.js';
import { syntheticFile } from './synthetic-files.js';

export type SimulateAction = 'view' | 'submit' | 'bounce';

/**
 * A synthetic client for test mode: `view` opens the portal; `submit` fills in the chosen items
 * (default: every item still waiting for the client) with values and real files that satisfy their
 * constraints, through the same code paths as the portal, and submits them.
 */
export async function simulate(
  services: AppServices,
  world: World,
  id: string,
  action: SimulateAction,
  keys: string[] | undefined,
) {
  if (world.livemode) throw new ApiError('forbidden', 'test_helpers work with test keys (svc_test_…) only.');
  const db = services.db.kysely;
  const intake = await requireIntake(db, world, id);
  if (action === 'view') {
    if (intake.status === 'draft') throw new ApiError('conflict', 'The intake has not been sent yet.');
    await recordView(services, world, intake, 'simulated-client');
    return getIntakeStatus(services, world, intake.id);
  }
  if (action === 'bounce') {
    await simulateBounce(services, world, intake);
    return getIntakeStatus(services, world, intake.id);
  }
  // The synthetic client answers what a client can: decisions (owner items) are not theirs.
  const items = clientItems(await itemsOf(db, intake.id));
  const unknown = (keys ?? []).filter((key) => !items.some((item) => item.key === key));
  if (unknown.length > 0)
    throw new ApiError('unprocessable', `items: no item with key ${unknown.join(', ')}.`);
  const chosen = items.filter((item) =>
    keys ? keys.includes(item.key) : item.status === 'pending' || item.status === 'needs_revision',
  );
  for (const item of chosen) {
    const def = item.definition;
    if (isFileType(def.type)) {
      const plan = syntheticFilePlan(def);
      const existing = await filesOf(db, intake.id, item.key);
      for (const file of existing) await removeFile(services, intake.id, item.key, file.id);
      for (let i = 0; i < plan.count; i++) {
        const file = await syntheticFile(plan.format, plan.width, plan.transparent);
        await uploadFile(services, intake.id, item.key, {
          stream: Readable.from(file.bytes),
          filename: file.name,
          declaredBytes: file.bytes.length,
        });
      }
    } else {
      await saveValue(services, intake.id, item.key, syntheticValue(def));
    }
    await submitItem(services, intake.id, item.key);
  }
  return getIntakeStatus(services, world, intake.id);
}
