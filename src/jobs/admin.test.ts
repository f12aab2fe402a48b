import { describe, expect, it } from 'vitest';
import { formatJobTable, jobState, parseAge } from './admin.js';
import { GAVE_UP_LOCKED_UNTIL } from './worker.js';

describe('job administration', () => {
  it('reads a job state from its lease', () => {
    expect(jobState({ locked_until: null }, 1_000)).toBe('queued');
    expect(jobState({ locked_until: 2_000 }, 1_000)).toBe('running');
    // A lease that ran out: its worker died, the job waits to be claimed again.
    expect(jobState({ locked_until: 500 }, 1_000)).toBe('queued');
    expect(jobState({ locked_until: GAVE_UP_LOCKED_UNTIL }, 1_000)).toBe('failed');
  });

  it('parses ages in days, hours and minutes only', () => {
    expect(parseAge('30d')).toBe(30 * 86_400_000);
    expect(parseAge('12h')).toBe(12 * 3_600_000);
    expect(parseAge('45m')).toBe(45 * 60_000);
    for (const bad of ['30', 'd', '1.5d', '-3d', '3w', 'soon']) expect(parseAge(bad)).toBeNull();
  });

  it('prints a table with aligned columns and the last error on one line', () => {
    const table = formatJobTable([
      {
        id: 'job_1',
        kind: 'webhook.attempt',
        state: 'failed',
        account_id: 'acct_1',
        livemode: true,
        subject_id: 'whd_1',
        attempts: 8,
        due_at: '2026-01-02T03:04:05.000Z',
        created_at: '2026-01-01T00:00:00.000Z',
        last_error: 'connect ECONNREFUSED\n  at somewhere',
      },
    ]);
    expect(table.split('\n')).toEqual([
      'ID     KIND             STATE   ATTEMPTS  DUE (UTC)            LAST ERROR',
      'job_1  webhook.attempt  failed  8         2026-01-02 03:04:05  connect ECONNREFUSED at somewhere',
    ]);
    expect(formatJobTable([])).toBe('No jobs.');
  });
});
