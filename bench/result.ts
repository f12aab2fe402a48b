/**
 * The one line every benchmark script prints per measured ratio, read by `npm run bench` (bench/all.ts):
 *
 *   BENCH_RESULT {"name":"...","goal":">=0.8","baseline":"...","service_rps":..,"baseline_rps":..,"rounds":[..],"median":..}
 *
 * A ratio has `rounds` (one ratio per alternating round) and their `median`; a figure that is not a
 * ratio (memory) has `unit` and `value` instead. `goal` is a comparison with a number (`>=0.8`,
 * `<=2`, `<200`): the median (or the value) meets it or not. `service_rps` and `baseline_rps` are the
 * means over the rounds of each side's rate, in whatever unit per second the script names in `baseline`.
 */
import { z } from 'zod';

export const RESULT_PREFIX = 'BENCH_RESULT ';

const finite = z.number();

export const BenchResult = z.looseObject({
  name: z.string().min(1),
  goal: z.string().regex(/^(>=|<=|>|<)\s*-?\d+(\.\d+)?$/, 'a comparison such as >=0.8'),
  baseline: z.string(),
  service_rps: finite.optional(),
  baseline_rps: finite.optional(),
  rounds: z.array(finite).optional(),
  median: finite.optional(),
  unit: z.string().optional(),
  value: finite.optional(),
});
export type BenchResult = z.infer<typeof BenchResult>;

/** The figure a goal is held against: the median of the rounds, else the value. */
export function figureOf(result: BenchResult): number | undefined {
  return result.median ?? result.value;
}

/** Whether `figure` meets a goal such as `>=0.8`; undefined when there is no figure. */
export function meetsGoal(goal: string, figure: number | undefined): boolean | undefined {
  if (figure === undefined) return undefined;
  const match = /^(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)$/.exec(goal.trim());
  if (!match) return undefined;
  const bound = Number(match[2]);
  switch (match[1]) {
    case '>=':
      return figure >= bound;
    case '<=':
      return figure <= bound;
    case '>':
      return figure > bound;
    default:
      return figure < bound;
  }
}

/** The results in a script's output; a line that starts like one but does not parse is an error. */
export function parseResults(output: string): { results: BenchResult[]; errors: string[] } {
  const results: BenchResult[] = [];
  const errors: string[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith(RESULT_PREFIX)) continue;
    const text = line.slice(RESULT_PREFIX.length);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      errors.push(`not JSON: ${text}`);
      continue;
    }
    const parsed = BenchResult.safeParse(json);
    if (parsed.success) results.push(parsed.data);
    else
      errors.push(
        `${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}: ${text}`,
      );
  }
  return { results, errors };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

const round = (n: number, digits: number) => Number(n.toFixed(digits));

/**
 * Prints one ratio: each round's service rate over its baseline rate, their median, and the mean rates.
 * Rates are per second (higher is better), so a ratio of 1 means as fast as the baseline.
 */
export function printRatio(options: {
  name: string;
  goal: string;
  baseline: string;
  rounds: readonly { service: number; baseline: number }[];
}): BenchResult {
  const ratios = options.rounds.map((r) => round(r.service / r.baseline, 3));
  const mean = (pick: (r: { service: number; baseline: number }) => number) =>
    options.rounds.reduce((sum, r) => sum + pick(r), 0) / Math.max(1, options.rounds.length);
  const result: BenchResult = {
    name: options.name,
    goal: options.goal,
    baseline: options.baseline,
    service_rps: round(
      mean((r) => r.service),
      1,
    ),
    baseline_rps: round(
      mean((r) => r.baseline),
      1,
    ),
    rounds: ratios,
    median: round(median(ratios), 3),
  };
  printResult(result);
  return result;
}

export function printResult(result: BenchResult): void {
  console.log(RESULT_PREFIX + JSON.stringify(result));
}

/** BENCH_QUICK=1: a short run for trying the benchmarks out (figures not worth quoting). */
export const QUICK = process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';

/** One round of a ratio: the service side's rate and the baseline side's. */
export interface Round {
  service: number;
  baseline: number;
}

/**
 * Each measure, `rounds` times, on a large side (the service) and a small one (the baseline), the
 * small side first in odd rounds and second in even ones; `rateOf` times one measure on one side.
 * Returns each measure's rounds; `onRound` hears each as it ends (for progress).
 */
export async function alternatingRounds<Side, Name extends string>(options: {
  small: Side;
  large: Side;
  names: readonly Name[];
  rounds: number;
  rateOf: (name: Name, side: Side) => Promise<number>;
  onRound: (name: Name, round: number, entry: Round) => void;
}): Promise<Map<Name, Round[]>> {
  const { small, large } = options;
  const rounds = new Map<Name, Round[]>();
  for (let round = 0; round < options.rounds; round++) {
    for (const name of options.names) {
      const rates = new Map<Side, number>();
      for (const side of round % 2 === 0 ? [small, large] : [large, small])
        rates.set(side, await options.rateOf(name, side));
      const entry = { service: rates.get(large) ?? 0, baseline: rates.get(small) ?? 0 };
      rounds.set(name, [...(rounds.get(name) ?? []), entry]);
      options.onRound(name, round, entry);
    }
  }
  return rounds;
}
