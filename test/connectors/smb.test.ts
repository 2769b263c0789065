// SMB delivery with smbclient against a private smbd (own smb.conf, loopback port, own passdb):
// the PDF and its sidecar under the pattern, folders made, a taken name passed over, the password
// given in an authentication file and never on smbclient's command line, a wrong one named.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Samba, sambaAvailable, startSamba } from "../helpers/samba.js";
import { manualClock, type TempStore, tempStore, TEST_PDF } from "../helpers/store.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf, secretsFile } from "./fixtures.js";

const missing = sambaAvailable();
if (missing) console.warn(`skipping the SMB connector tests: ${missing}`);

let samba: Samba;
beforeAll(async () => {
  if (!missing) samba = await startSamba();
}, 60_000);
afterAll(() => samba?.stop());

let t: TempStore | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

function setup(password: string, over: Record<string, unknown> = {}) {
  const clock = manualClock(Date.parse("2026-03-02T10:00:00Z"));
  t = tempStore({ clock });
  const delivery = parseDelivery({
    smb: {
      share: samba.share,
      port: samba.port,
      username: samba.user,
      passwordSecret: "SMB_PASSWORD",
      ...over,
    },
  });
  return {
    store: t.store,
    delivery,
    queue: deliveryQueue(t.store, clock, secretsFile(t.dir, { SMB_PASSWORD: password })),
  };
}

describe.skipIf(missing !== null)("SMB delivery", () => {
  it("writes the PDF and its sidecar under the pattern, passing over a taken name", async () => {
    const { store, delivery, queue } = setup(samba.password, { path: "Inbox/{date}/{time}.pdf" });
    mkdirSync(path.join(samba.dir, "Inbox", "2026-03-02"), { recursive: true });
    writeFileSync(path.join(samba.dir, "Inbox", "2026-03-02", "095800.pdf"), "not ours");
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    const dir = path.join(samba.dir, "Inbox", "2026-03-02");
    expect(readdirSync(dir).sort()).toEqual(["095800-2.json", "095800-2.pdf", "095800.pdf"]);
    expect(readFileSync(path.join(dir, "095800.pdf"), "utf8")).toBe("not ours");
    expect(readFileSync(path.join(dir, "095800-2.pdf")).equals(TEST_PDF)).toBe(true);
    expect(JSON.parse(readFileSync(path.join(dir, "095800-2.json"), "utf8"))).toMatchObject({ id: faxId });
    expect((await rowOf(store, faxId)).result).toBe(`${samba.share}/Inbox/2026-03-02/095800-2.pdf`);
  });

  it("a wrong password fails for good, named, and is nowhere on a command line", async () => {
    const { store, delivery, queue } = setup("wrong-password-xyz");
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    const seen: string[] = [];
    const watch = setInterval(() => {
      for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
          const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
          if (cmd.startsWith("smbclient")) seen.push(cmd);
        } catch {
          // gone meanwhile
        }
      }
    }, 5);
    try {
      expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    } finally {
      clearInterval(watch);
    }
    expect((await rowOf(store, faxId)).lastError).toBe("the SMB server refused: NT_STATUS_LOGON_FAILURE");
    // smbclient was seen running, with its auth file and without the password
    expect(seen.some((c) => c.includes("-A"))).toBe(true);
    expect(seen.join(" ")).not.toContain("wrong-password-xyz");
  });
});
