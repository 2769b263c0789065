// The evidence of real sent faxes: the dispatcher sends through the emulator over HTTPS, the real
// store keeps the job, and the maker gathers the documents, the service's rendered fax and record,
// the transmission report and the ledger's rows into a bundle that verifies; the bundle is itself a
// ledger row. The job's number never reaches the log.
import { readdirSync } from "node:fs";
import path from "node:path";
import { unzipSync } from "fflate";
import { afterEach, describe, expect, it } from "vitest";
import { verifyBundle } from "../../src/evidence/bundle.js";
import { EvidenceMaker, recipientObject } from "../../src/evidence/evidence-maker.js";
import { loadSigningKey } from "../../src/evidence/signing-key.js";
import type { Ledger } from "../../src/ledger/events.js";
import { SqlLedger } from "../../src/ledger/ledger.js";
import type { FaxgateError } from "../../src/errors.js";
import { Rig, USERS } from "../notify/rig.js";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

function makerFor(r: Rig, ledger: Ledger): EvidenceMaker {
  return new EvidenceMaker({
    store: r.store,
    clientFor: r.clientFor,
    ledger,
    key: () => loadSigningKey({ dataDir: path.join(r.dir, "data") }),
    users: () => USERS,
    defaultCountryCode: () => "1",
    clock: r.clock,
    scratchDir: path.join(r.dir, "data", "evidence-tmp"),
  });
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("evidence of a sent fax", () => {
  it("holds each recipient's rendered fax and record, the documents, report and rows, and verifies", async () => {
    rig = await new Rig().start();
    const job = await rig.finalJob("alice", ["+15551234567", "+15557770001"]);
    expect(job.recipients.map((r) => r.state)).toEqual(["delivered", "failed"]);
    // the real ledger on the rig's SQLite queue (no number key: these rows name no number)
    const ledger = new SqlLedger(rig.store.sql, null);
    await ledger.record({
      action: "accepted",
      actor: { kind: "person", id: "alice" },
      object: { kind: "job", id: job.id },
      door: "smtp",
    });
    await ledger.record({
      action: "sent",
      actor: { kind: "gateway" },
      object: recipientObject(job.id, 0),
      door: "gateway",
    });
    await ledger.record({
      action: "viewed",
      actor: { kind: "person", id: "bob" },
      object: { kind: "job", id: "other" },
      door: "console",
    });

    const logsBefore = rig.logs.length;
    const made = await makerFor(rig, ledger).make(job, { actor: { kind: "operator", id: "root" }, door: "cli" });
    const v = await verifyBundle(made.zip);
    expect(v.ok, JSON.stringify(v.checks)).toBe(true);
    const m = unzipSync(made.zip);
    expect(Object.keys(m).sort()).toEqual(
      [
        "documents/1-letter.pdf",
        "ledger-rows.jsonl",
        "manifest.json",
        "manifest.sig",
        "recipients/1/fax-as-rendered.pdf",
        "recipients/1/service-record.json",
        "recipients/2/fax-as-rendered.pdf",
        "recipients/2/service-record.json",
        "transmission-report.pdf",
      ].sort(),
    );
    // the documents as stored, the fax as the service has it
    expect(Buffer.from(m["documents/1-letter.pdf"]!)).toEqual(await rig.store.readDocument(job.documents[0]!));
    for (const n of [1, 2]) expect(text(m[`recipients/${n}/fax-as-rendered.pdf`]!.slice(0, 5))).toBe("%PDF-");
    const rec1 = JSON.parse(text(m["recipients/1/service-record.json"]!));
    const rec2 = JSON.parse(text(m["recipients/2/service-record.json"]!));
    expect(rec1).toMatchObject({ messageId: job.recipients[0]!.messageId, status: "success", resultCode: "0" });
    expect(rec2).toMatchObject({ messageId: job.recipients[1]!.messageId, status: "failed" });
    expect(text(m["transmission-report.pdf"]!.slice(0, 5))).toBe("%PDF-");
    const manifest = JSON.parse(text(m["manifest.json"]!));
    expect(manifest.subject.recipients).toMatchObject([
      {
        recipient: 1,
        resultCode: "0",
        pages: expect.any(Number),
        duration: expect.any(Number),
        csid: expect.any(String),
      },
      { recipient: 2, status: "failed" },
    ]);
    // this fax's rows, not another's
    const rows = text(m["ledger-rows.jsonl"]!)
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.action)).toEqual(expect.arrayContaining(["accepted", "sent"]));
    for (const r of rows) {
      expect([job.id, `${job.id}#0`, `${job.id}#1`]).toContain(r.object.id);
      // as the ledger keeps them, with their chain hashes
      expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    }
    // the bundle is a row itself, naming its manifest
    const made1 = (await ledger.rows({ object: { kind: "job", id: job.id } })).at(-1)!;
    expect(made1).toMatchObject({
      action: "evidence-made",
      actor: { kind: "operator", id: "root" },
      object: { kind: "job", id: job.id },
      door: "cli",
      detail: { manifestSha256: made.manifestSha256, recipients: "1,2", timestamped: false },
    });
    expect(made.fileName).toBe(`evidence-${job.id}.zip`);
    // nothing the maker caused was logged with the number (the dispatcher's own SENT lines name it)
    expect(JSON.stringify(rig.logs.slice(logsBefore))).not.toContain("5551234567");
    // the rendered fax went through the scratch folder and did not stay there
    expect(readdirSync(path.join(rig.dir, "data", "evidence-tmp"))).toEqual([]);
  });

  it("--recipient N: that recipient alone; one not sent is refused by name", async () => {
    rig = await new Rig().start();
    const job = await rig.finalJob("alice", ["+15551234567", "+15557770001"]);
    const maker = makerFor(rig, new SqlLedger(rig.store.sql, null));
    const made = await maker.make(job, { recipient: 2, actor: { kind: "person", id: "alice" }, door: "console" });
    const names = Object.keys(unzipSync(made.zip));
    expect(names.filter((n) => n.startsWith("recipients/"))).toEqual([
      "recipients/2/service-record.json",
      "recipients/2/fax-as-rendered.pdf",
    ]);
    expect(made.fileName).toBe(`evidence-${job.id}-recipient-2.zip`);
    expect((await verifyBundle(made.zip)).ok).toBe(true);
    const err = await maker
      .make(job, { recipient: 3, actor: { kind: "gateway" }, door: "cli" })
      .catch((e: unknown) => e);
    expect((err as FaxgateError).code).toBe("USAGE");
    expect((err as Error).message).toContain("choose recipient 1 to 2");
    const { job: queued } = await rig.store.enqueue({
      source: "cli",
      user: "alice",
      recipients: [{ number: "+15551234567" }],
      documents: [
        {
          path: path.join(rig.dir, "x.pdf"),
          name: "x.pdf",
          contentType: "application/pdf",
          data: Buffer.from("%PDF-1.4\n"),
        },
      ],
      cover: { enabled: false },
    });
    const none = await maker.make(queued, { actor: { kind: "gateway" }, door: "cli" }).catch((e: unknown) => e);
    expect((none as FaxgateError).code).toBe("EVIDENCE_UNAVAILABLE");
    expect((none as Error).message).toMatch(/has no fax the service has taken/);
    expect((none as Error).message).not.toContain("5551234567");
  });
});
