// Toll fraud through the print path: a file addressed to a premium-rate or denied number ends in
// failed/ with the rule in its reason file, and nothing is queued.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ALICE, BOB, drop, spoolHarness, textPdf, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

let h: SpoolHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const PDF = "%PDF-1.4\n% policy\n%%EOF\n";

async function refusal(folder: string, name: string): Promise<string> {
  const reasonFile = path.join(folder, "failed", `${name}.reason.txt`);
  await waitUntil(
    () => existsSync(path.join(folder, "failed", name)) && existsSync(reasonFile),
    `${name} in failed/`,
    30_000,
  );
  return readFileSync(reasonFile, "utf8");
}

describe("destination policy in the spool", () => {
  it("a premium-rate number by file name, ticket or embedded code goes to failed/ naming the rule", async () => {
    const bob = { ...BOB, destinations: { rules: [{ action: "deny" as const, country: "GB" }] } };
    h = await spoolHarness({ users: [ALICE, bob] });
    await drop(h.folder(), "19005550199 - prize.pdf", PDF);
    expect(await refusal(h.folder(), "19005550199 - prize.pdf")).toMatch(
      /destination not allowed: \+19005550199 is a premium-rate number.*built-in rule "premium-rate"/,
    );

    await drop(h.folder(), "ticketed.pdf.json", JSON.stringify({ to: ["+44 909 000 0000"] }));
    await drop(h.folder(), "ticketed.pdf", PDF);
    expect(await refusal(h.folder(), "ticketed.pdf")).toMatch(/premium-rate/);

    await drop(h.folder(), "coded.pdf", await textPdf([["@@FAX +1 911 555 0100@@"]]));
    expect(await refusal(h.folder(), "coded.pdf")).toMatch(/"emergency"/);

    await drop(h.folder(bob), "442079460000 - london.pdf", PDF);
    expect(await refusal(h.folder(bob), "442079460000 - london.pdf")).toMatch(
      /users\[bob\]\.destinations\.rules\[0\] \(deny country GB\)/,
    );

    // the same ordinary number is still faxed
    await drop(h.folder(), "15551234567 - fine.pdf", PDF);
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 30_000);
    expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
    expect(await h.jobs()).toHaveLength(1);
  });
});
