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
    // The daemons here still run from the sources through tsx (FAXGATE_TEST_FROM_SOURCE), as before:
    // the crash loop leaves sends parked as unknown after a kill early in the first run (no proof
    // yet that the service keeps cf). Under heavy load that failed 2 of 4 runs from source and 2 of
    // 2 from the compiled sources, whose faster start seems to make it likelier. Drop this once
    // that is fixed, and the fault suite's daemons start faster too.
    env: { FAXGATE_LOG_COPY: FAULTS_LOG_COPY, FAXGATE_MAIL_COPY: FAULTS_MAIL_COPY, FAXGATE_TEST_FROM_SOURCE: '1', ...testTmpDir() },
  },
});
