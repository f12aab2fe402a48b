import { POLL_AT_MOST_EVERY_SECONDS, followUpPlan, type FollowUp } from '../../domain/follow-up.js';
import { planOf } from '../../domain/plans.js';
import type { AppServices } from '../../services.js';
import { enabledSubscriptions } from '../webhooks/webhooks.service.js';
import type { World } from '../../kernel/world.js';

/** The creation response's follow_up: webhook when the world has an enabled endpoint, else a polling plan. */
export async function followUpFor(
  services: AppServices,
  world: World,
  planId: string,
  dueDate: string | null,
): Promise<FollowUp> {
  const endpoints = await enabledSubscriptions(services.db.kysely, world);
  return followUpPlan({
    activeEndpoints: endpoints.length,
    subscribedEvents: endpoints.flat(),
    minPollSeconds: POLL_AT_MOST_EVERY_SECONDS[planOf(planId).id],
    dueDate,
    now: world.clock.now(),
  });
}
