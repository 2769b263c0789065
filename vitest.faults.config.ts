import { defineConfig } from "vitest/config";
import { FAULTS_LOG_COPY, FAULTS_MAIL_COPY } from "./test/log-copy.js";
import { testTmpDir } from "./test/tmp-dir.js";

// The fault suite: long-running crash, outage and hostile-input tests (`npm run test:faults`).
// FAXGATE_FAULTS_SHORT=1 runs a shortened form (used by .ci/run).
//
// Most files spend their time waiting (a retry 30 s away, a sweep, a daemon restart), each with its
// own daemon, emulator and folders: they run three at a time. super-linear measures how time grows
// with input size, and sender-auth-burst a real sender's time during a burst against its usual:
// each must have the CPU to itself, so they run one at a time, after the others.
const TIMING = ["test/faults/super-linear.test.ts", "test/faults/sender-auth-burst.test.ts"];

const TEST_LEDGER_KEY = { FAXGATE_LEDGER_KEY: "test-ledger-key-0123456789abcdef0123456789abcdef" };

export default defineConfig({
  test: {
    testTimeout: 900_000,
    hookTimeout: 120_000,
    pool: "forks",
    globalSetup: ["test/global-setup.ts"],
    setupFiles: ["test/setup-file.ts"],
    // as in the main suite: the secret check reads these after the run
    // (and temp folders on a tmpfs where there is one: test/tmp-dir.ts).
    // gateways sharing a PostgreSQL queue refuse to start without the ledger's number key
    // (ledger/number-key.ts): every gateway a test starts gets this one, as a fleet would
    env: {
      FAXGATE_LOG_COPY: FAULTS_LOG_COPY,
      FAXGATE_MAIL_COPY: FAULTS_MAIL_COPY,
      ...testTmpDir(),
      ...TEST_LEDGER_KEY,
    },
    projects: [
      {
        extends: true,
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          exclude: TIMING,
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "timing", include: TIMING, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
