/**
 * The one machine-readable line per goal that each benchmark prints at the end of its output, after its
 * human tables: `BENCH_RESULT <json>`. A runner that starts the benchmarks as child processes collects
 * these lines from their stdout.
 */
import type { PairResult } from './load.js';
import { RESULT_PREFIX, type BenchResult } from './result.js';

/** A throughput goal: the service against a baseline measured in the same run, alternating rounds. */
export type RatioGoal = BenchResult &
  Required<Pick<BenchResult, 'service_rps' | 'baseline_rps' | 'rounds' | 'median'>>;

/** A memory goal: a measured value in MB (10^6 bytes); its baseline says what the value is of. */
export type MemoryGoal = BenchResult & { unit: 'MB'; value: number };

export function ratioGoal(name: string, goal: string, baseline: string, pair: PairResult): RatioGoal {
  return {
    name,
    goal,
    baseline,
    service_rps: Math.round(pair.target.requestsPerSecondMean),
    baseline_rps: Math.round(pair.baseline.requestsPerSecondMean),
    rounds: pair.roundRatios.map((ratio) => round3(ratio)),
    median: round3(pair.ratio),
  };
}

export function printGoalLines(goals: readonly (RatioGoal | MemoryGoal)[]): void {
  for (const goal of goals) process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(goal)}\n`);
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
