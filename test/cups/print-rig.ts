// A whole gateway (spool, queue, dispatcher, web console, notifier to an outbox folder) against
// the emulator over real HTTPS, with a private cupsd whose faxgate queues write into its spool:
// a print job travels lp/ipptool -> cupsd -> backend -> spool -> queue -> emulator.
// The queue "fax" is installed as docs/print.md says, with faxgate's CUPS policy; "faxopen" has
// Debian's stock policy (the old first section of the doc), which believes any user name. The
// gateway user alice prints as a throwaway local account (rig.alice), her CUPS user name.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { configSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log/logger.js";
import { Gateway } from "../../src/main.js";
import { hashPassword } from "../../src/auth/password.js";
import type { Job } from "../../src/store/types.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { waitUntil } from "../helpers/wait.js";
import { type LocalAccount, PPD, startPrivateCupsd, throwawayAccount, type PrivateCupsd } from "./private-cupsd.js";

export const PASSWORDS = { alice: "alice-print-secret-1", ops: "ops-print-secret-3" } as const;

export interface PrintRig {
  emu: TestEmulator;
  gw: Gateway;
  cups: PrivateCupsd;
  /** alice's local account: her CUPS user name and fax folder (users[].spool) */
  alice: LocalAccount;
  dir: string;
  spoolRoot: string;
  outbox: string;
  base: string;
  logs: string[];
  jobs(): Promise<Job[]>;
  /** The job whose origin file starts "cups-<id>" (CUPS's job id). */
  jobOf(cupsJob: string): Promise<Job>;
  stop(): Promise<void>;
}

export async function startPrintRig(opts: { clock?: Clock; spool?: Record<string, unknown> } = {}): Promise<PrintRig> {
  const emu = await startTestEmulator({ delayMs: 200 });
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-print-"));
  chmodSync(dir, 0o755);
  const spoolRoot = path.join(dir, "spool");
  const outbox = path.join(dir, "outbox");
  const alice = throwawayAccount("alice");
  const config = configSchema.parse({
    api: { baseUrl: emu.baseUrl, caFile: emu.caFile, historyPerMinute: 600 },
    data: path.join(dir, "data"),
    queue: { pollIntervalMs: 200 },
    spool: { root: spoolRoot, stableMs: 150, ...opts.spool },
    web: { listen: "127.0.0.1:0", livePollMs: 200 },
    notify: { from: "faxgate@fax.example.com", transport: `outbox:${outbox}` },
    users: [
      {
        name: "alice",
        email: "alice@example.com",
        apiKey: TEST_KEYS.alice,
        password: await hashPassword(PASSWORDS.alice),
        spool: alice.name,
      },
      // "nobody" prints through cupsd's peer-credential check (a real local account)
      { name: "nobody", email: "nobody@example.com", apiKey: TEST_KEYS.bob },
      {
        name: "ops",
        email: "admin@example.com",
        apiKey: TEST_KEYS.admin,
        password: await hashPassword(PASSWORDS.ops),
        role: "admin",
      },
    ],
  });
  const logs: string[] = [];
  const logger = createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } });
  const gw = new Gateway(config, {
    service: { baseUrl: emu.baseUrl, caFile: emu.caFile },
    logger,
    clock: opts.clock,
    webAuthFailureDelayMs: 10,
  });
  const addr = await gw.start();
  chmodSync(spoolRoot, 0o750);
  const cups = await startPrivateCupsd({ policy: true });
  // as docs/print.md installs it (CUPS: a fax printer), and the stock-policy queue of before
  for (const [name, policy] of [
    ["fax", "faxgate"],
    ["faxopen", "default"],
  ])
    cups.run("lpadmin", [
      "-p",
      name!,
      "-E",
      "-v",
      `faxgate:${spoolRoot}`,
      "-P",
      PPD,
      "-o",
      "printer-is-shared=true",
      "-o",
      `printer-op-policy=${policy}`,
    ]);
  const jobs = () => gw.store.listJobs({ limit: 1000 });
  return {
    emu,
    gw,
    cups,
    alice,
    dir,
    spoolRoot,
    outbox,
    logs,
    jobs,
    base: `http://127.0.0.1:${addr.web!.port}`,
    jobOf: (cupsJob) =>
      waitUntil(
        async () => (await jobs()).find((j) => j.meta.origin?.file?.startsWith(`cups-${cupsJob.replace(/^.*-/, "")}`)),
        `the queued job of ${cupsJob}`,
        30_000,
      ).catch((e) => {
        console.log(cups.errorLog().split("\n").slice(-25).join("\n"));
        throw e;
      }),
    async stop() {
      await cups.stop();
      await gw.stop();
      await emu.stop();
      alice.remove();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
