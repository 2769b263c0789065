import { defineConfig } from 'vitest/config';
import { LOG_COPY } from './test/log-copy.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/faults/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    // every logger (and every daemon the tests start) also writes here; checked for secrets after
    env: { FAXGATE_LOG_COPY: LOG_COPY },
  },
});
