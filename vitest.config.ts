import { defineConfig } from "vitest/config";
import { LOG_COPY, MAIL_COPY } from "./test/log-copy.js";
import { testTmpDir } from "./test/tmp-dir.js";

const TEST_LEDGER_KEY = { FAXGATE_LEDGER_KEY: "test-ledger-key-0123456789abcdef0123456789abcdef" };

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/faults/**", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Three files at a time on two cores: most files wait on daemons, emulators, timers and child
    // processes much of the time (a run used about 1.5 cores with three workers, 1 with two), so
    // a third worker fills the waits. Four gained little and starved the browser test once.
    maxWorkers: 3,
    // One process per worker for all its files instead of one per file: each file re-imported the
    // whole source tree (fastify, pdf-lib, mailparser...) in a fresh process, which took more CPU
    // than most files' tests. The tests share no state through modules (a helper's per-file
    // clean-up goes through test/helpers/file-cleanup.ts).
    isolate: false,
    globalSetup: ["test/global-setup.ts"],
    setupFiles: ["test/setup-file.ts"],
    // every logger and every notification transport (also in the daemons the tests start) writes a
    // copy here; scripts/check-log-secrets.mjs checks both for secrets after the run
    // (and temp folders on a tmpfs where there is one: test/tmp-dir.ts)
    // gateways sharing a PostgreSQL queue refuse to start without the ledger's number key
    // (ledger/number-key.ts): every gateway a test starts gets this one, as a fleet would
    env: { FAXGATE_LOG_COPY: LOG_COPY, FAXGATE_MAIL_COPY: MAIL_COPY, ...testTmpDir(), ...TEST_LEDGER_KEY },
  },
});
