/**
 * SPEC "Delivery and retries": 7 attempts, the first at once, each later one this long after the
 * previous attempt failed, plus at most 5 seconds of jitter (CONTRACT "Clocks"):
 *
 * | attempt | after the previous failure |
 * |---------|----------------------------|
 * | 1       | immediately                |
 * | 2       | 1 minute                   |
 * | 3       | 5 minutes                  |
 * | 4       | 25 minutes                 |
 * | 5       | 2 hours                    |
 * | 6       | 12 hours                   |
 * | 7       | 12 hours                   |
 *
 * After the 7th failure the delivery is `failed`. About 27 hours from the first attempt to the last.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  60_000,
  5 * 60_000,
  25 * 60_000,
  2 * 3_600_000,
  12 * 3_600_000,
  12 * 3_600_000,
];
export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const MAX_JITTER_MS = 5_000;

/** The delay before the next attempt after `attemptsMade` failed ones (jitter included), or null: give up. */
export function retryDelayMs(attemptsMade: number, random: () => number = Math.random): number | null {
  if (attemptsMade < 1 || attemptsMade >= MAX_DELIVERY_ATTEMPTS) return null;
  const base = RETRY_DELAYS_MS[attemptsMade - 1];
  if (base === undefined) return null;
  return base + Math.floor(random() * MAX_JITTER_MS);
}
