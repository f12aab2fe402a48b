/** The one source of time. Domain code asks a Clock, never Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock shifted by a fixed offset: test mode's clock is real time plus the account's offset. */
export function offsetClock(base: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return base;
  return { now: () => new Date(base.now().getTime() + offsetMs) };
}

export function isoNow(clock: Clock): string {
  return clock.now().toISOString();
}
