// Names instead of numbers are looked up among the user's contacts at the (emulated) service.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { clientFor, closeClients } from "../helpers/client.js";
import { drop, spoolHarness, textPdf, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

let emu: TestEmulator;
let h: SpoolHarness | null = null;
beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await closeClients(emu);
  await emu.stop();
});
afterEach(async () => {
  await h?.close();
  h = null;
});

const alice = { name: "alice", email: "alice@example.com", aliases: [], apiKey: TEST_KEYS.alice };

describe("contact names", () => {
  it("@@TO <name>@@ without @@FAX@@ resolves the name among the user's contacts", async () => {
    h = await spoolHarness({ users: [alice], emulator: emu });
    await drop(h.folder(alice), "bill.pdf", await textPdf([["@@TO Acme Billing@@", "@@SUBJECT March@@"]]));
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.recipients).toMatchObject([{ number: "+15550100100", name: "Acme Billing" }]);
    expect(job.cover.subject).toBe("March");
  });

  it("a ticket may name contacts (an organization member, a public contact) next to numbers", async () => {
    h = await spoolHarness({ users: [alice], emulator: emu });
    await drop(
      h.folder(alice),
      "memo.pdf.json",
      JSON.stringify({ to: ["Globex Accounts", "Initech Front Desk", "+1 555 123 4567"] }),
    );
    await drop(h.folder(alice), "memo.pdf", "%PDF-1.4\n%memo\n%%EOF\n");
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.recipients.map((r) => r.number)).toEqual(["+15550100200", "+15550100300", "+15551234567"]);
  });

  it("an unknown name is refused with the reason", async () => {
    h = await spoolHarness({ users: [alice], emulator: emu });
    await drop(h.folder(alice), "who.txt", "Hello\n@@TO Nobody Known@@\n");
    const failed = path.join(h.folder(alice), "failed");
    await waitUntil(() => existsSync(path.join(failed, "who.txt")), "refused", 8000);
    expect(readFileSync(path.join(failed, "who.txt.reason.txt"), "utf8")).toMatch(/no contact named "Nobody Known"/);
    expect(await h.jobs()).toEqual([]);
  });

  it("a lookup that cannot reach the service waits in .work/ and is tried again", async () => {
    let calls = 0;
    const unreachable = { baseUrl: "https://127.0.0.1:9", caPem: emu.caPem };
    h = await spoolHarness({
      users: [alice],
      emulator: emu,
      clientFor: () => (++calls === 1 ? clientFor(unreachable, TEST_KEYS.alice) : clientFor(emu, TEST_KEYS.alice)),
    });
    await drop(h.folder(alice), "bill.txt", "Hi\n@@TO Acme Billing@@\n");
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job after the retry", 10_000);
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(job.recipients).toMatchObject([{ number: "+15550100100", name: "Acme Billing" }]);
    expect(existsSync(path.join(h.folder(alice), "failed", "bill.txt"))).toBe(false);
    await closeClients(unreachable);
  });
});
