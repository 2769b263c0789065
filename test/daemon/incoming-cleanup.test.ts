// The mail door is opened at start by its own part: what a crash left under incoming/ (messages
// whose senders were never told 250) is removed, also in a gateway that takes no SMTP and reads
// only mailboxes, while a folder of a message still being received is left alone.
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startDaemon, type TestDaemon } from "../helpers/gateway.js";

let daemon: TestDaemon | null = null;
afterAll(() => daemon?.stop());

describe("incoming/ at start", () => {
  it("loses the work folders a crash left, in a gateway without SMTP", async () => {
    const incoming = (dir: string) => path.join(dir, "data", "incoming");
    daemon = await startDaemon({
      name: "incoming",
      emulator: { delayMs: 0 },
      // no smtp: section: the gateway reads only mailboxes (none here)
      prepare: (dir) => {
        for (const d of ["left-by-a-crash", "being-received"]) {
          mkdirSync(path.join(incoming(dir), d), { recursive: true });
          writeFileSync(path.join(incoming(dir), d, "message.eml"), "Subject: half a message\r\n");
        }
        const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
        utimesSync(path.join(incoming(dir), "left-by-a-crash"), twoHoursAgo, twoHoursAgo);
      },
    });
    expect(daemon.out.text).not.toMatch(/"component":"smtp"/);
    expect(daemon.addresses.smtp).toEqual([]);
    expect(existsSync(path.join(incoming(daemon.dir), "left-by-a-crash"))).toBe(false);
    expect(existsSync(path.join(incoming(daemon.dir), "being-received"))).toBe(true);
  });
});
