// A reply "to the original's owner or its group" (issue 51), end to end with OCR off: alice answers
// for one group inbox (desk, with ops), so her [reply] sheet names it, signed. The reply lands in
// desk's inbox (each member told, alice among them); once alice has left the gateway's users, the
// same sheet still reaches the group, saying why; a code naming another group does not verify.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/index.js";
import { findExecutable } from "../../src/fs/executable.js";
import { verifyReplyCode } from "../../src/reply-sheet/reply-code.js";
import { loadReplyKey } from "../../src/reply-sheet/reply-key.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { arrive, faxedBack, replyGateway, routedAfterLook, sentWithSheet } from "./reply-rig.js";

const TOOLS = ["gs", "pdftoppm"].filter((t) => findExecutable(t) === null);
if (TOOLS.length) console.warn(`reply group test skipped: ${TOOLS.join(", ")} not installed`);

let rig: TestGateway;

/** Who was told of the received fax (inbound mails), sorted. */
async function toldOf(faxId: string): Promise<string[]> {
  const mailed = await rig.gw.store.listNotifications({ kind: "inbound" });
  return mailed
    .filter((n) => (n.payload as { receivedId?: string }).receivedId === faxId)
    .map((n) => n.user)
    .sort();
}

describe.skipIf(TOOLS.length > 0)("a reply to a fax sent by a member of one group", () => {
  let jobId = "";
  let sheet: Uint8Array = new Uint8Array();

  beforeAll(async () => {
    rig = await startGateway(
      replyGateway({ ocr: false, config: { inbound: { groups: { desk: { members: ["alice", "ops"] } } } } }),
    );
    ({ jobId, sheet } = await sentWithSheet(rig));
  }, 120_000);
  afterAll(() => rig?.stop());

  it("carries a signed code naming the group", async () => {
    const key = await loadReplyKey({ dataDir: rig.config.data });
    const { scanForReplyCodes } = await import("../../src/reply-sheet/reply-decode.js");
    const scan = await scanForReplyCodes(sheet, { timeoutMs: 60_000, maxPages: 1 });
    expect(scan.kind).toBe("scanned");
    const [code] = scan.kind === "scanned" ? scan.texts : [];
    expect(verifyReplyCode(key, code!)).toEqual({ kind: "valid", jobId, owner: "alice", group: "desk" });
  }, 120_000);

  it("lands in the group's inbox, each member told", async () => {
    const { fax, events } = await routedAfterLook(rig, await arrive(rig, await faxedBack(sheet, 61)));
    expect(events.at(-1)).toMatchObject({
      action: "routed",
      detail: `by its reply code to the sender of job ${jobId} and group desk: group desk`,
    });
    expect((await rig.gw.store.getReceived(fax.id))?.groups).toContain("desk");
    expect(await toldOf(fax.id)).toEqual(["alice", "ops"]);
  }, 300_000);

  it("after its sender has left, still reaches the group and says why", async () => {
    // alice leaves: no longer a user, nor a member (a config naming a member who is no user is refused)
    await rig.reloadWith((c: Config) => ({
      ...c,
      users: c.users.filter((u) => u.name !== "alice"),
      inbound: { ...c.inbound, groups: { desk: { ...c.inbound.groups.desk!, members: ["ops"] } } },
    }));
    const { fax, events } = await routedAfterLook(rig, await arrive(rig, await faxedBack(sheet, 62)));
    expect(events.at(-1)).toMatchObject({
      action: "routed",
      detail: `by its reply code to group desk (the sender of job ${jobId}, alice, is no longer a user): group desk`,
    });
    expect((await rig.gw.store.getReceived(fax.id))?.groups).toEqual(["desk"]);
    expect(await toldOf(fax.id)).toEqual(["ops"]);
  }, 300_000);
});
