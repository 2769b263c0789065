import { defineConfig } from 'vitest/config';

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
  },
});
