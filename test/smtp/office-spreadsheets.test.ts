// Spreadsheets that reach outside themselves, as an attacker mails them: a real SMTP session with
// an .xlsx or .ods attachment, the gateway's own converter (stripper, hardened profile, sandbox),
// and the PDF the job would fax, read with pdftotext. Each vector names a secret file planted
// beside the gateway (and /etc/passwd) and a listener on 127.0.0.x that answers with a marker of
// its own: neither the file's content nor the listener's answer may be in the PDF, the listener
// must see no request, and the stripper must have removed the vector itself, so that the profile
// and the sandbox are not the only layer that held.
import { chmodSync, existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import type { OfficeConverter } from "../../src/intake/office/office-convert.js";
import { testOffice } from "../helpers/collaborators.js";
import { createLogger } from "../../src/log/logger.js";
import { HAVE_PDFTOTEXT, listener, ods, pdfText, xlsx, type Listener } from "../helpers/office-attack.js";
import { DOMAIN, jobIdOf, startRig, transport, type Rig } from "./harness.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";

const SOFFICE = findExecutable("soffice");
// Calc is a package of its own (libreoffice-calc-nogui); without it a spreadsheet is refused
const HAVE_SOFFICE = SOFFICE !== null && existsSync(path.join(path.dirname(realpathSync(SOFFICE)), "libsclo.so"));
if (!HAVE_SOFFICE || !HAVE_PDFTOTEXT)
  console.warn(
    "office-spreadsheets: soffice (LibreOffice with Calc) or pdftotext is not installed; the tests skip (apt-get install libreoffice-calc-nogui poppler-utils)",
  );

const SECRET = `SECRET${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
const WEB = `WEBANSWER${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
let dir: string;
let secretCsv: string;
let web: Listener;
let rig: Rig;
let office: OfficeConverter;
/** the fax service the gateway asks for each user's cover page preference (never guessed) */
let emu: TestEmulator;
const logLines: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-smtp-sheets-"));
  // the converter may run as a user of its own (a root daemon's): it must reach its folder below
  chmodSync(dir, 0o711);
  // what another user's data looks like to the attacker: readable by anyone on the machine
  secretCsv = path.join(dir, "secret.csv");
  writeFileSync(secretCsv, `${SECRET},${SECRET}\n${SECRET},${SECRET}\n`, { mode: 0o644 });
  web = await listener(Buffer.from(`<a>${WEB}</a>`));
  const logger = createLogger({
    level: "debug",
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    }),
  });
  office = testOffice({ logger, tmpDir: path.join(dir, "office"), timeoutMs: 90_000 });
  emu = await startTestEmulator();
  rig = await startRig(emu, { office, logger });
}, 60_000);
afterAll(async () => {
  await rig?.close();
  await emu?.stop();
  await office?.close();
  await web?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const q = (s: string): string => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/** Each vector: a spreadsheet naming the secret file (`f`, a file URL) or the listener (`u`). */
const VECTORS: Array<{ name: string; file: string; build: (f: string, u: string) => Uint8Array; removed: RegExp }> = [
  {
    name: "xlsx: WEBSERVICE and FILTERXML(WEBSERVICE) to a local listener",
    file: "book.xlsx",
    build: (_f, u) =>
      xlsx([
        `<c r="@" t="str"><f>${q(`_xlfn.WEBSERVICE("${u}/xlsx-ws")`)}</f></c>`,
        `<c r="@" t="str"><f>${q(`_xlfn.FILTERXML(_xlfn.WEBSERVICE("${u}/xlsx-fx"),"//a")`)}</f></c>`,
      ]),
    removed: /a WEBSERVICE formula.*a FILTERXML formula|a FILTERXML formula.*a WEBSERVICE formula/,
  },
  {
    name: "xlsx: [1]Sheet1!A1 through an externalLink part to a local file",
    file: "book.xlsx",
    build: (f) => xlsx(['<c r="@"><f>[1]Sheet1!A1</f></c>'], { externalLink: f }),
    removed: /a formula referring to another file/,
  },
  {
    name: "xlsx: a quoted file reference, /etc/passwd and the secret, and a DDE formula",
    file: "book.xlsx",
    build: (f) =>
      xlsx([
        `<c r="@"><f>${q("'file:///etc/passwd'#$passwd.A1")}</f></c>`,
        `<c r="@"><f>${q(`'${f}'#$secret.A1`)}</f></c>`,
        `<c r="@"><f>${q(`soffice|'${f}'!'A1'`)}</f></c>`,
      ]),
    removed: /a formula referring to another file/,
  },
  {
    name: "ods: WEBSERVICE and FILTERXML(WEBSERVICE) to a local listener",
    file: "sheet.ods",
    build: (_f, u) =>
      ods([
        `<table:table-cell table:formula="${q(`of:=COM.MICROSOFT.WEBSERVICE("${u}/ods-ws")`)}"/>`,
        `<table:table-cell table:formula="${q(`of:=COM.MICROSOFT.FILTERXML(COM.MICROSOFT.WEBSERVICE("${u}/ods-fx");"//a")`)}"/>`,
      ]),
    removed: /a (WEBSERVICE|FILTERXML) formula/,
  },
  {
    name: "ods: external cell references to /etc/passwd and the secret file",
    file: "sheet.ods",
    build: (f) =>
      ods([
        `<table:table-cell table:formula="${q("of:=['file:///etc/passwd'#$passwd.A1]")}"/>`,
        `<table:table-cell table:formula="${q(`of:=['${f}'#$secret.A1]`)}"/>`,
      ]),
    removed: /a formula referring to another file/,
  },
  {
    name: "ods: DDE to the secret file",
    file: "sheet.ods",
    build: (f) => ods([`<table:table-cell table:formula="${q(`of:=DDE("soffice";"${f}";"A1")`)}"/>`]),
    removed: /a DDE formula/,
  },
  {
    name: "ods: a linked sheet and a linked cell range (file and URL)",
    file: "sheet.ods",
    build: (f, u) =>
      ods(
        [
          `<table:table-cell><table:cell-range-source table:name="r" xlink:href="${q(`${u}/range.html`)}" table:filter-name="calc_HTML_WebQuery" table:filter-options="1" table:last-column-spanned="1" table:last-row-spanned="1"/></table:table-cell>`,
        ],
        {
          before: `<table:table table:name="Linked"><table:table-source xlink:href="${q(f)}" table:filter-name="Text - txt - csv (StarCalc)" table:filter-options="44,34,76" table:mode="copy-all"/><table:table-row><table:table-cell><text:p>old</text:p></table:table-cell></table:table-row></table:table>`,
        },
      ),
    removed: /an external reference \(table-source\).*an external reference \(cell-range-source\)/,
  },
];

describe.skipIf(!HAVE_SOFFICE || !HAVE_PDFTOTEXT)(
  "a spreadsheet mailed to the gateway cannot make it read a local file or call a local service",
  () => {
    let n = 0;
    for (const v of VECTORS) {
      it(v.name, async () => {
        const requests = web.requests.length;
        const lines = logLines.length;
        const info = await transport(rig.port).sendMail({
          from: "alice@example.com",
          to: `1555777${String(300 + n++).padStart(4, "0")}@${DOMAIN}`,
          subject: "Figures",
          attachments: [{ filename: v.file, content: Buffer.from(v.build(`file://${secretCsv}`, web.url)) }],
        });
        const job = (await rig.store.getJob(jobIdOf(info.response)))!;
        expect(job.documents.map((d) => d.contentType)).toEqual(["application/pdf"]);
        const text = pdfText(await rig.store.readDocument(job.documents[0]!), dir);
        expect(text).toContain("Visible body text");
        // all at once, so that a failure shows everything the document reached
        expect({
          secretInPdf: text.includes(SECRET),
          passwdInPdf: /root:.*:0:0:/.test(text),
          listenerAnswerInPdf: text.includes(WEB),
          requests: web.requests.slice(requests),
        }).toEqual({ secretInPdf: false, passwdInPdf: false, listenerAnswerInPdf: false, requests: [] });
        // the stripper itself removed the vector (kinds only: the log never carries the content)
        const removed = logLines
          .slice(lines)
          .filter((l) => l.includes("external references removed before conversion"))
          .map((l) => Object.keys((JSON.parse(l) as { removed: Record<string, number> }).removed).join(", "));
        expect(removed).toHaveLength(1);
        expect(removed[0]).toMatch(v.removed);
        expect(logLines.slice(lines).join("\n")).not.toContain(SECRET);
      }, 180_000);
    }
  },
);
