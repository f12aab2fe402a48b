import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Both cores: most test time is spent waiting on servers, browsers and child processes, and every
    // test file has its own server, data directory and PostgreSQL schema.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
  },
});
