import type { Kysely } from 'kysely';
import { preparedQuery } from '../db/prepared.js';
import type { Database } from '../db/schema.js';
import type { AuthContext } from '../http/auth.js';
import { offsetClock, systemClock, type Clock } from '../lib/clock.js';

/**
 * One data world: an account in live or test mode, with that mode's clock (test mode runs on real
 * time plus the account's offset). API requests, portal requests and jobs all act within a World.
 */
export interface World {
  accountId: string;
  livemode: boolean;
  clock: Clock;
  /** How far this world's clock runs ahead of real time (0 in live mode). */
  offsetMs: number;
  actor: { type: 'api_key' | 'user' | 'client' | 'system'; id: string | null };
}

export function worldOfAuth(auth: AuthContext): World {
  const offsetMs = auth.livemode ? 0 : auth.account.test_clock_offset_ms;
  return {
    accountId: auth.account.id,
    livemode: auth.livemode,
    clock: auth.clock,
    offsetMs,
    actor: { type: 'api_key', id: auth.keyId },
  };
}

/** The world of an intake reached without an API key (portal, jobs): its account's clock for its mode. */
export async function worldOfIntake(
  db: Kysely<Database>,
  intake: { account_id: string; livemode: number },
  actor: World['actor'],
  base: Clock = systemClock,
): Promise<World> {
  const livemode = intake.livemode === 1;
  let offsetMs = 0;
  if (!livemode) {
    const [account] = await selectClockOffset(db, intake.account_id);
    offsetMs = Number(account?.test_clock_offset_ms ?? 0);
  }
  return { accountId: intake.account_id, livemode, clock: offsetClock(base, offsetMs), offsetMs, actor };
}

// Read for every test-mode job (a webhook attempt reads it twice): compiled once.
const selectClockOffset = preparedQuery(
  (db: Kysely<Database>, accountId: string) =>
    db.selectFrom('accounts').select('test_clock_offset_ms').where('id', '=', accountId),
  [''],
);

/**
 * Whether a row (its account and mode) is of this world: the check on rows read by a key of their own
 * (an intake's id) rather than by the account, whose index a planner might walk instead.
 */
export function isOfWorld(row: { account_id: string; livemode: number }, world: World): boolean {
  return row.account_id === world.accountId && row.livemode === (world.livemode ? 1 : 0);
}

/** The real time (epoch ms) at which a moment of this world's clock arrives: what jobs are scheduled by. */
export function realTimeOf(world: World, worldTimeMs: number): number {
  return worldTimeMs - world.offsetMs;
}
