// A fuzz run over the parsers that read what users and their programs send: spool file names,
// spool tickets, embedded @@ codes, subject overrides, and whole mails through the MIME parser and
// the mail-to-job conversion. Seeded, so a failure can be replayed (FAXGATE_FUZZ_SEED). Each input
// must give an answer (a value or a FaxgateError), never another exception, a hang or a polluted
// prototype.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FaxgateError } from "../../src/errors.js";
import { normalizeFaxNumber } from "../../src/recipients/fax-number.js";
import { parseMail } from "../../src/intake/mail/mail-parse.js";
import { mailToJob } from "../../src/intake/mail/mail-to-job.js";
import { parseSubjectOverrides } from "../../src/intake/mail/subject-overrides.js";
import { parseEmbeddedCodes, textPages } from "../../src/intake/print/embedded-codes.js";
import { parseFileName } from "../../src/intake/print/file-name-address.js";
import { parseTicket } from "../../src/intake/print/ticket.js";
import { prng } from "../helpers/prng.js";
import { SHORT } from "./harness.js";

const SEED = Number(process.env.FAXGATE_FUZZ_SEED ?? 20261121);
const N = SHORT ? 3000 : 30_000;
const MAILS = SHORT ? 150 : 1500;

const rnd = prng(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const PIECES = [
  "1",
  "5",
  "0",
  "9",
  "+",
  " ",
  "-",
  " - ",
  "(",
  ")",
  ",",
  ";",
  ".",
  "..",
  "/",
  "\\",
  "@@",
  "FAX",
  "TO",
  "ALL",
  "COVER",
  "on",
  "off",
  "SUBJECT",
  "\n",
  "\f",
  "\u0000",
  "é",
  "€",
  "𝔉",
  "\u202e",
  "[cover]",
  "[nocover]",
  "[at ",
  "]",
  "2026-11-22 14:30",
  "%",
  "x".repeat(300),
  "1555123456",
  ".pdf",
  ".json",
  "~$",
  "aux",
];
const junk = (parts = 1 + int(12)) => Array.from({ length: parts }, () => pick(PIECES)).join("");

function answers<T>(fn: () => T): T | FaxgateError {
  try {
    return fn();
  } catch (err) {
    if (err instanceof FaxgateError) return err;
    throw err;
  }
}

async function answersAsync<T>(fn: () => Promise<T>): Promise<T | FaxgateError> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof FaxgateError) return err;
    throw err;
  }
}

describe(`fuzz (seed ${SEED})`, () => {
  it(`file names: ${N} inputs`, () => {
    for (let i = 0; i < N; i += 1) {
      const name = junk() + pick([".pdf", ".tif", "", ".txt"]);
      const r = parseFileName(name);
      expect(Array.isArray(r.numbers)).toBe(true);
      for (const n of r.numbers) {
        expect(n).not.toMatch(/[,;]/);
        const v = normalizeFaxNumber(n, "1");
        if (v.ok) expect(v.e164).toMatch(/^\+\d{4,15}$/);
        else expect(v.reason.length).toBeGreaterThan(0);
      }
    }
  });

  it(`tickets: ${N} inputs, including hostile keys and paths`, () => {
    const valid = {
      to: ["+15551234567"],
      recipientName: "Acme",
      subject: "Invoice",
      notes: "n",
      cover: true,
      tags: ["a"],
      scheduledDate: "2026-11-22T10:00:00Z",
    };
    const values = (): unknown =>
      pick([
        junk(),
        int(1e9),
        -1,
        null,
        true,
        [],
        [junk()],
        { x: junk() },
        "../../etc/passwd",
        "/etc/passwd",
        "a".repeat(70_000),
        { __proto__: { polluted: 1 } },
      ]);
    for (let i = 0; i < N; i += 1) {
      const t: Record<string, unknown> = { ...valid };
      for (let k = int(4); k > 0; k -= 1)
        t[pick([...Object.keys(valid), "__proto__", "constructor", "file", "path", junk(1)])] = values();
      let raw = JSON.stringify(t);
      if (rnd() < 0.2) raw = raw.slice(0, int(raw.length));
      if (rnd() < 0.1) raw = `{"__proto__": {"polluted": true}, "to": ["${junk(2)}"]}`;
      const r = parseTicket(raw);
      if (r.ok) {
        expect(Array.isArray(r.ticket.to ?? [])).toBe(true);
      } else {
        expect(typeof r.reason).toBe("string");
      }
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`embedded codes and subjects: ${N} inputs each`, () => {
    for (let i = 0; i < N; i += 1) {
      const text = Array.from(
        { length: 1 + int(5) },
        () => `${junk()}@@${pick(["FAX", "TO", "SUBJECT", "COVER", "ALL", "fax", "XX"])} ${junk(3)}@@${junk()}`,
      ).join(pick(["\f", "\n"]));
      const codes = parseEmbeddedCodes(textPages(text));
      expect(codes.fax.length).toBe(codes.faxPages.length);
      const o = answers(() => parseSubjectOverrides(junk()));
      if (!(o instanceof FaxgateError)) expect(typeof o).toBe("object");
    }
  });

  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-fuzz-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`whole mails: ${MAILS} mutated fixtures through the MIME parser and the conversion`, async () => {
    const fixtures = path.resolve(__dirname, "../fixtures/mail");
    const seeds = readdirSync(fixtures)
      .filter((f) => f.endsWith(".eml"))
      .map((f) => readFileSync(path.join(fixtures, f)));
    let jobs = 0;
    let refused = 0;
    for (let i = 0; i < MAILS; i += 1) {
      const b = Buffer.from(pick(seeds));
      const mutations = 1 + int(8);
      let mail = b;
      for (let m = 0; m < mutations; m += 1) {
        const at = int(mail.length);
        switch (int(5)) {
          case 0: // flip bytes
            for (let k = 0; k < 1 + int(20); k += 1) mail[int(mail.length)] = int(256);
            break;
          case 1: // truncate
            mail = mail.subarray(0, at);
            break;
          case 2: // duplicate a slice
            mail = Buffer.concat([mail.subarray(0, at), mail.subarray(int(mail.length)), mail.subarray(at)]);
            break;
          case 3: // insert junk headers or boundaries
            mail = Buffer.concat([
              mail.subarray(0, at),
              Buffer.from(
                pick([
                  "\r\n--",
                  "\r\nContent-Type: multipart/mixed; boundary=",
                  "\r\nContent-Transfer-Encoding: base64\r\n",
                  "=?utf-8?B?",
                  "\r\n\r\n",
                  junk(),
                ]),
              ),
              mail.subarray(at),
            ]);
            break;
          default: // lose line endings
            mail = Buffer.from(mail.toString("latin1").replace(/\r\n/g, pick(["\n", "\r", ""])), "latin1");
        }
      }
      const work = path.join(dir, String(i));
      mkdirSync(work);
      const file = path.join(work, "message.eml");
      writeFileSync(file, mail);
      let parsed: Awaited<ReturnType<typeof parseMail>>;
      try {
        parsed = await parseMail(file, work);
      } catch {
        refused += 1; // the SMTP layer answers these with a clear 554 (kept as corrupt)
        continue;
      }
      const job = await answersAsync(() =>
        mailToJob({
          parsed,
          user: "alice",
          envelopeFrom: "alice@example.com",
          recipients: [{ address: "15551234567@fax.example.com", number: "+15551234567" }],
          coverPreference: rnd() < 0.5,
          timezone: async () => "America/New_York",
          inlineImageMinBytes: 20_480,
          original: { path: file, sha256: createHash("sha256").update(mail).digest("hex") },
          now: Date.UTC(2026, 10, 21, 12),
        }),
      );
      if (job instanceof FaxgateError) refused += 1;
      else {
        jobs += 1;
        expect(job.recipients).toHaveLength(1);
        if (job.cover.subject) expect([...job.cover.subject].length).toBeLessThanOrEqual(55);
        if (job.cover.notes) expect([...job.cover.notes].length).toBeLessThanOrEqual(4000);
      }
      rmSync(work, { recursive: true, force: true });
    }
    process.stdout.write(`fuzz: ${MAILS} mutated mails -> ${jobs} jobs, ${refused} clear refusals, 0 crashes\n`);
    expect(jobs + refused).toBe(MAILS);
  });
});
