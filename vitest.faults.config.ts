import { defineConfig } from 'vitest/config';
import { FAULTS_LOG_COPY, FAULTS_MAIL_COPY } from './test/log-copy.js';
import { testTmpDir } from './test/tmp-dir.js';

// The fault suite: long-running crash, outage and hostile-input tests (`npm run test:faults`).
// FAXGATE_FAULTS_SHORT=1 runs a shortened form (used by .ci/run).
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-file.ts'],
    // as in the main suite: the secret check reads these after the run
    // (and temp folders on a tmpfs where there is one: test/tmp-dir.ts).
    env: { FAXGATE_LOG_COPY: FAULTS_LOG_COPY, FAXGATE_MAIL_COPY: FAULTS_MAIL_COPY, ...testTmpDir() },
  },
});
