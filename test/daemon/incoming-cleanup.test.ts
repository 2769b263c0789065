// The mail door is opened at start by its own part: what a crash left under incoming/ (messages
// whose senders were never told 250) is removed, also in a gateway that takes no SMTP and reads
// only mailboxes, while a folder of a message still being received is left alone.
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { disposeRig, makeRig, patchConfig, startDaemon, type Daemon, type Rig } from "../faults/harness.js";

let rig: Rig | undefined;
let daemon: Daemon | null = null;
afterAll(() => disposeRig(rig, daemon));

describe("incoming/ at start", () => {
  it("loses the work folders a crash left, in a gateway without SMTP", async () => {
    rig = await makeRig({ delayMs: 0 });
    for (const line of ["smtp:", '  domains: ["fax.example.com"]', "  maxMessagesPerMinute: 100000"])
      patchConfig(rig, line, "");
    patchConfig(rig, `  listen: ["127.0.0.1:${rig.smtpPort}"]`, "");
    const incoming = path.join(rig.dataDir, "incoming");
    const stale = path.join(incoming, "left-by-a-crash");
    const fresh = path.join(incoming, "being-received");
    for (const d of [stale, fresh]) {
      mkdirSync(d, { recursive: true });
      writeFileSync(path.join(d, "message.eml"), "Subject: half a message\r\n");
    }
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    utimesSync(stale, twoHoursAgo, twoHoursAgo);

    daemon = await startDaemon(rig);
    expect(daemon.out.text).not.toMatch(/"component":"smtp"/);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  });
});
