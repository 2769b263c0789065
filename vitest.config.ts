import { defineConfig } from 'vitest/config';
import { LOG_COPY, MAIL_COPY } from './test/log-copy.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/faults/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    // every logger and every notification transport (also in the daemons the tests start) writes a
    // copy here; scripts/check-log-secrets.mjs checks both for secrets after the run
    env: { FAXGATE_LOG_COPY: LOG_COPY, FAXGATE_MAIL_COPY: MAIL_COPY },
  },
});
