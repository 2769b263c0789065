// A whole gateway (spool, queue, dispatcher, web console, notifier to an outbox folder) against
// the emulator over real HTTPS, with a private cupsd whose faxgate queues write into its spool:
// a print job travels lp/ipptool -> cupsd -> backend -> spool -> queue -> emulator.
// The queue "fax" is installed as docs/print.md says, with faxgate's CUPS policy; "faxopen" has
// Debian's stock policy (the old first section of the doc), which believes any user name. The
// gateway user alice prints as a throwaway local account (rig.alice), her CUPS user name.
import { chmodSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { hashPassword } from "../../src/auth/password.js";
import type { Job } from "../../src/store/types.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startGateway, type Sections, type TestGateway } from "../helpers/gateway.js";
import { waitUntil } from "../helpers/wait.js";
import { type LocalAccount, PPD, startPrivateCupsd, throwawayAccount, type PrivateCupsd } from "./private-cupsd.js";

export const PASSWORDS = { alice: "alice-print-secret-1", ops: "ops-print-secret-3" } as const;

export interface PrintRig extends TestGateway {
  cups: PrivateCupsd;
  /** alice's local account: her CUPS user name and fax folder (users[].spool) */
  alice: LocalAccount;
  spoolRoot: string;
  outbox: string;
  /** the web console's URL */
  base: string;
  jobs(): Promise<Job[]>;
  /** The job whose origin file starts "cups-<id>" (CUPS's job id). */
  jobOf(cupsJob: string): Promise<Job>;
}

export async function startPrintRig(opts: { clock?: Clock; spool?: Sections } = {}): Promise<PrintRig> {
  const alice = throwawayAccount("alice");
  const users = [
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
  ];
  const g = await startGateway({
    name: "print",
    emulator: { delayMs: 200 },
    clock: opts.clock,
    // cupsd's backend runs as another user: it must reach the spool inside the folder
    prepare: (dir) => chmodSync(dir, 0o755),
    config: ({ dir }) => ({
      queue: { pollInterval: "200ms" },
      spool: { root: path.join(dir, "spool"), stableFor: "150ms", ...opts.spool },
      web: { listen: "127.0.0.1:0", livePoll: "200ms" },
      notify: { from: "faxgate@fax.example.com", transport: `outbox:${path.join(dir, "outbox")}` },
      users,
    }),
  });
  const spoolRoot = g.addresses.spoolRoot!;
  const outbox = path.join(g.dir, "outbox");
  const gw = g.gw;
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
  const stopGateway = g.stop;
  return Object.assign(g, {
    cups,
    alice,
    spoolRoot,
    outbox,
    jobs,
    base: g.url("web"),
    jobOf: (cupsJob: string) =>
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
      await stopGateway();
      alice.remove();
    },
  });
}
