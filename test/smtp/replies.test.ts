// Replies a person can act on, over real SMTP sessions (swaks): a number dialled with the
// international prefix of the gateway's country (011 for +1, 0011 for +61) reaches that country,
// and a message over the size limit is refused with the limit in MB.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeFaxNumber } from "../../src/recipients/fax-number.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { DOMAIN, jobIdOf, stopEmulator, withRig, haveSwaks, runCommand } from "./harness.js";

const run = runCommand;
let emu: TestEmulator;
let tmp: string;
let hasSwaks = false;
beforeAll(async () => {
  emu = await startTestEmulator();
  tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-replies-"));
  hasSwaks = await haveSwaks("replies");
}, 60_000);
afterAll(async () => {
  await stopEmulator(emu);
  rmSync(tmp, { recursive: true, force: true });
});

async function swaks(port: number, to: string, extra: string[] = []): Promise<string> {
  try {
    const { stdout } = await run(
      "swaks",
      [
        "--server",
        `127.0.0.1:${port}`,
        "--from",
        "alice@example.com",
        "--to",
        `${to}@${DOMAIN}`,
        "--header",
        "Subject: Abroad",
        "--body",
        "Hello.",
        ...extra,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return stdout;
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? "");
  }
}

describe("the international prefix of the default country", () => {
  it("swaks: 011 44 20 7946 0958 with defaultCountryCode 1 is a fax to +44 20 7946 0958", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, {}, async (rig) => {
      const out = await swaks(rig.port, "011442079460958");
      const job = (await rig.store.getJob(jobIdOf(out)))!;
      expect(job.recipients.map((r) => r.number)).toEqual(["+442079460958"]);
    });
  });

  it("swaks: 0011 with defaultCountryCode 61 (Australia), from libphonenumber's metadata", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, { smtp: { defaultCountryCode: "61" } }, async (rig) => {
      const out = await swaks(rig.port, "0011442079460958");
      const job = (await rig.store.getJob(jobIdOf(out)))!;
      expect(job.recipients.map((r) => r.number)).toEqual(["+442079460958"]);
    });
  });

  it("national numbers are read as before", () => {
    expect(normalizeFaxNumber("(555) 123-4567", "1")).toEqual({ ok: true, e164: "+15551234567" });
    expect(normalizeFaxNumber("011 1 555 123 4567", "1")).toEqual({ ok: true, e164: "+15551234567" });
    expect(normalizeFaxNumber("00 44 20 7946 0958", "1")).toEqual({ ok: true, e164: "+442079460958" });
  });
});

describe("the size limit", () => {
  it("swaks: a message over smtp.maxMessageBytes is refused with 552 5.3.4 naming the limit in MB", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    const big = path.join(tmp, "scan.pdf");
    writeFileSync(big, Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(1_600_000, 0x41)]));
    await withRig(emu, { smtp: { maxMessageBytes: 1_048_576 } }, async (rig) => {
      const out = await swaks(rig.port, "15557770501", [
        "--attach-type",
        "application/pdf",
        "--attach-name",
        "scan.pdf",
        "--attach",
        `@${big}`,
      ]);
      expect(out).toMatch(/<\*\* +552 5\.3\.4 Message too big: the limit is 1 MB; send fewer or smaller attachments/);
      expect(await rig.store.listJobs({})).toEqual([]);
    });
  });

  it("EHLO advertises SIZE <limit>; MAIL FROM with SIZE= over it is refused at once, 552 5.3.4", async () => {
    await withRig(emu, { smtp: { maxMessageBytes: 1_048_576 } }, async (rig) => {
      const { client } = await RawSmtp.connect(rig.port);
      // the limit is told before anything is sent (RFC 1870), so a client need not try
      expect(await client.cmd("EHLO x")).toMatch(/^250[- ]SIZE 1048576$/m);
      expect(await client.cmd("MAIL FROM:<alice@example.com> SIZE=2000000")).toMatch(
        /^552 5\.3\.4 .*maximum message size 1048576/,
      );
      // a size within the limit goes on; a malformed one is still smtp-server's 501
      expect(await client.cmd("MAIL FROM:<alice@example.com> SIZE=1000")).toMatch(/^250 /);
      expect(await client.cmd("RSET")).toMatch(/^250 /);
      expect(await client.cmd("MAIL FROM:<alice@example.com> SIZE=12x")).toMatch(/^501 /);
      client.close();
    });
  });
});
