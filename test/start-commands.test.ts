import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every command that starts a long-running process (`npm start`, the Procfile's web and worker, the
 * systemd units of the API and the worker) gives Node the same heap limit, below 2 GiB: above it V8
 * lets the heap grow to four times what it keeps alive between two full collections, which is what
 * pushed a `serve` under read load past 200 MB of resident memory (docs/deploy.md, "Memory"). The
 * production ones also limit glibc to two malloc arenas (same section).
 */

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The line of `text` that runs `entry` with Node, and the heap limit it sets, if any. */
function heapLimitOf(text: string, entry: RegExp): number | undefined {
  const line = text.split('\n').find((candidate) => /\bnode\b/.test(candidate) && entry.test(candidate));
  if (line === undefined) throw new Error(`no line runs ${String(entry)}`);
  const limit = /\bnode\b.*?--max-old-space-size=(\d+)/.exec(line)?.[1];
  return limit === undefined ? undefined : Number(limit);
}

describe('start commands', () => {
  const manifest = JSON.parse(read('package.json')) as { scripts: { start: string } };
  const starts = {
    'npm start': heapLimitOf(manifest.scripts.start, /dist\/main\.js serve/),
    'Procfile web': heapLimitOf(read('deploy/Procfile'), /^web: .*bin\/intake\.js api$/),
    'Procfile worker': heapLimitOf(read('deploy/Procfile'), /^worker: .*bin\/intake\.js worker$/),
    'intake-api@.service': heapLimitOf(read('deploy/intake-api@.service'), /^ExecStart=.*intake\.js api$/),
    'intake-worker@.service': heapLimitOf(
      read('deploy/intake-worker@.service'),
      /^ExecStart=.*intake\.js worker$/,
    ),
  };

  it('each sets a heap limit below 2 GiB', () => {
    for (const [command, limit] of Object.entries(starts)) {
      expect({ command, limit }).toEqual({ command, limit: expect.any(Number) as number });
      expect(limit, command).toBeGreaterThanOrEqual(512);
      expect(limit, command).toBeLessThan(2048);
    }
  });

  it('all set the same one', () => {
    expect(new Set(Object.values(starts)).size).toBe(1);
  });

  it('the production ones give glibc two malloc arenas', () => {
    const procfile = read('deploy/Procfile').split('\n');
    for (const role of ['web', 'worker']) {
      const line = procfile.find((candidate) => candidate.startsWith(`${role}: `));
      expect(line, role).toMatch(new RegExp(`^${role}: MALLOC_ARENA_MAX=2 node `));
    }
    for (const unit of ['deploy/intake-api@.service', 'deploy/intake-worker@.service']) {
      expect(read(unit).split('\n'), unit).toContain('Environment=MALLOC_ARENA_MAX=2');
    }
  });
});
