// A fresh fax service emulator for a test: its own temp data folder, the TEST_SEED account, a
// short processing delay. stop() closes it and removes the folder.
//
// Seeded users and keys (TEST_SEED in ./seed.ts), account "Acme Clinic" (America/New_York):
//   admin@example.com  admin                    key test-admin-key (admin)
//   alice@example.com  Alice, send All + attachment, receive All + attachment, no cover by default
//                      keys alice-print-key (print_driver), alice-base-key (base)
//                      contacts: Acme Billing (555) 010-0100; organization Globex with member
//                      Globex Accounts (555) 010-0200
//   bob@example.com    Bob, send Failure without attachment, receive None, cover page by default
//                      key bob-print-key (print_driver)
//   public contact "Initech Front Desk" (555) 010-0300, owned by the admin
//   tags TEST_TAGS.billing, TEST_TAGS.urgent
// Outcomes by the destination's last four digits (after delayMs: half processing, half transmitting):
//   0000 failed 6100 "Fax Number Busy"        0001 failed 6200 "Fax No Answer"
//   0002 failed 6300 "No Fax Tone Detected"   0003 success on the 2nd attempt (faxAttempt 2)
//   0004 failed 6000 "Fax Connect Failed"     0005 failed 5100 "Fax Request Blocked"
//   0006 failed 5200 "Fax Rendering Issue"    0007 failed 7734 "Carrier Route Withdrawn" (a code
//   0008 failed with no code and no text            no client has seen)
//   0009 cancelled by the service             0010 busy on the account's first fax to it, then OK
//   anything else: success, resultCode "0" "OK"
// Behaviour switches (see docs/emulator.md): offsetMode, cfMode, recipientErrorShape,
// historyPerMinute, historyRetryAfter, webhookRetryScale, infoUsers. Unlike startEmulator (default 8), this
// helper starts with historyPerMinute 0 (no history rate limit) unless a test asks for one.
import { readFile, rm } from "node:fs/promises";
import { Agent, FormData, fetch as undiciFetch } from "undici";
import { startEmulator, type Behaviour, type RunningEmulator, type SeedData } from "../../src/emulator/emulator.js";
import type { Clock } from "../../src/clock.js";
import { TEST_SEED } from "./seed.js";
import { tempFolder } from "../tmp-dir.js";

export { TEST_SEED, TEST_TAGS } from "./seed.js";

export const TEST_KEYS = {
  admin: "test-admin-key",
  alice: "alice-print-key",
  aliceBase: "alice-base-key",
  bob: "bob-print-key",
} as const;

export interface TestEmulatorOptions extends Partial<Behaviour> {
  variant?: "a" | "b";
  /** default 100 */
  delayMs?: number;
  seed?: SeedData;
  /** reuse a data folder (to test restarts); it is still removed by stop() */
  dataDir?: string;
  clock?: Clock;
  /** extra CA (PEM) trusted for https webhook receivers */
  webhookCa?: string;
  /** accept any certificate from https webhook receivers */
  webhookInsecure?: boolean;
}

export type TestEmulator = RunningEmulator & { dataDir: string; stop(): Promise<void> };

export async function startTestEmulator(opts: TestEmulatorOptions = {}): Promise<TestEmulator> {
  const dataDir = opts.dataDir ?? tempFolder("emulator");
  try {
    const { variant, delayMs, seed, dataDir: _d, clock, ...rest } = opts;
    const emu = await startEmulator({
      ...rest,
      dataDir,
      seed: seed ?? TEST_SEED,
      variant: variant ?? "a",
      delayMs: delayMs ?? 100,
      clock,
      historyPerMinute: opts.historyPerMinute ?? 0,
    });
    return Object.assign(emu, {
      dataDir,
      async stop() {
        await emu.close();
        // An upload cut off by a killed client may still be finishing its file as the server
        // closes (seen once in CI as ENOTEMPTY): removal retries instead of failing the suite.
        await rm(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      },
    });
  } catch (err) {
    if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A fax the emulator receives for a number of its account (its admin route, as a sender's fax
 * would arrive), over HTTPS with the emulator's CA; answers the received fax's message id.
 */
export async function emulatorInbound(
  emu: { baseUrl: string; caFile: string },
  fields: { email: string; callerId: string; to?: string; csid?: string },
  pdf: Uint8Array,
  fileName: string,
): Promise<string> {
  const fd = new FormData();
  fd.append("email", fields.email);
  fd.append("callerId", fields.callerId);
  if (fields.csid !== undefined) fd.append("csid", fields.csid);
  if (fields.to !== undefined) fd.append("to", fields.to);
  fd.append("file", new Blob([new Uint8Array(pdf)], { type: "application/pdf" }), fileName);
  const agent = new Agent({ connect: { ca: await readFile(emu.caFile, "utf8") } });
  try {
    const r = await undiciFetch(`${emu.baseUrl}/_emulator/inbound`, {
      method: "POST",
      headers: { authorization: `Basic ${TEST_KEYS.admin}` },
      body: fd,
      dispatcher: agent,
    });
    if (r.status !== 200) throw new Error(`the emulator refused the inbound fax: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { messageId: string }).messageId;
  } finally {
    await agent.close();
  }
}
