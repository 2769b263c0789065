// The print door as one call: a file goes in with its ticket and comes out as a queued job or a
// typed refusal, with nothing queued. A real SQLite store and the real PDF text reader.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { FaxgateError, isFaxgateError } from "../../src/errors.js";
import { pdfPageTexts } from "../../src/intake/pdf/pdf-text.js";
import { isPrintRefusal, PrintDoor, type PrintFile, type PrintRoute } from "../../src/intake/print-door.js";
import { parseTicket, type Ticket } from "../../src/intake/print/ticket.js";
import { testPolicy, testPressure } from "../helpers/collaborators.js";
import { silentLogger } from "../../src/log/logger.js";
import { TEST_PDF, tempStore, type TempStore } from "../helpers/store.js";

let t: TempStore;
let door: PrintDoor;
const log = silentLogger();

/** The door's collaborators, as parts/ hands them over. */
const deps = () => ({
  store: t.store,
  pressure: testPressure(t.store),
  readers: { pdfPageTexts },
  // none of these files is an office document, and none names a contact
  office: {
    unavailableReason: () => "no office file here",
    convert: () => Promise.reject(new Error("no office file here")),
    close: async () => {},
  },
  clientFor: () => {
    throw new Error("no contact lookups here");
  },
  defaultCountryCode: "1",
  destinations: testPolicy(),
});

beforeEach(() => {
  t = tempStore();
  door = new PrintDoor(deps());
});
afterEach(() => t.cleanup());

let claims = 0;
function file(name: string, data: Buffer, ticket?: Ticket): PrintFile {
  claims += 1;
  const sha256 = createHash("sha256").update(data).digest("hex");
  return {
    user: "alice",
    name,
    data,
    sha256,
    ticket,
    path: `/spool/alice/.work/${name}`,
    dedupeKey: `test:${sha256.slice(0, 16)}:${claims}`,
    origin: { file: name, claim: String(claims) },
  };
}

function ticket(json: object): Ticket {
  const r = parseTicket(JSON.stringify(json));
  if (!r.ok) throw new Error(r.reason);
  return r.ticket;
}

async function refusal(p: Promise<unknown>): Promise<FaxgateError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isFaxgateError(err)) throw new Error(`expected a refusal, got ${String(err)}`);
  return err;
}

describe("the print door", () => {
  it("queues an addressed file and answers the job with its route", async () => {
    const done = await door.accept(file("15551234567 - lease.pdf", TEST_PDF), { log });
    expect(done.duplicate).toBe(false);
    expect(done.route.via).toBe("file name");
    expect(done.job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
    expect(done.job.cover.subject).toBe("lease");
    expect(done.job.meta.origin).toMatchObject({ file: "15551234567 - lease.pdf", via: "file name" });
    expect(done.job.meta.origin?.repeat).toBe(done.repeat);
    expect(await t.store.countJobs()).toBe(1);
  });

  it("refuses a type that cannot be faxed, naming it, and queues nothing", async () => {
    const zip = Buffer.concat([Buffer.from("PK\x03\x04"), Buffer.alloc(200)]);
    const err = await refusal(door.accept(file("15551234567 - archive.zip", zip), { log }));
    expect(err.code).toBe("UNSUPPORTED_TYPE");
    expect(isPrintRefusal(err)).toBe(true);
    expect(await t.store.countJobs()).toBe(0);
  });

  it("refuses codes in the text that name another number than the file name", async () => {
    const text = Buffer.from("Dear Sir,\n@@FAX 1 555 987 6543@@\n");
    const err = await refusal(door.accept(file("15551234567 - memo.txt", text), { log }));
    expect(err.code).toBe("AMBIGUOUS_DESTINATION");
    expect(err.message).toContain("555 987 6543");
    expect(await t.store.countJobs()).toBe(0);
  });

  it("runs the caller's vet with the route before queueing; its refusal queues nothing", async () => {
    const seen: PrintRoute[] = [];
    const vet = (p: PrintRoute) => {
      seen.push(p);
      throw new FaxgateError("REPEATED_FILE", "the same file moments ago");
    };
    const err = await refusal(door.accept(file("15551234567 - lease.pdf", TEST_PDF), { log, vet }));
    expect(err.code).toBe("REPEATED_FILE");
    expect(seen.map((p) => p.route.recipients.map((r) => r.number))).toEqual([["+15551234567"]]);
    expect(await t.store.countJobs()).toBe(0);
    // the same file and route again gives the same repeat key; another number another one
    const again = await door.accept(file("15551234567 - lease.pdf", TEST_PDF), { log });
    expect(again.repeat).toBe(seen[0]!.repeat);
    const other = await door.accept(file("15557654321 - lease.pdf", TEST_PDF), { log });
    expect(other.repeat).not.toBe(seen[0]!.repeat);
  });

  it("holds a printed job that names no number and asks its owner for one", async () => {
    const done = await door.accept(file("scan.pdf", TEST_PDF, ticket({ subject: "Referral" })), { log });
    expect(done.route.via).toBe("address later");
    expect(done.job.recipients.map((r) => r.state)).toEqual(["held"]);
    expect(done.job.cover.subject).toBe("Referral");
    const asks = await t.store.listNotifications({ jobId: done.job.id, kind: "address" });
    expect(asks).toHaveLength(1);
    // without a ticket (not printed) the same file is refused instead
    const err = await refusal(door.accept(file("scan.pdf", TEST_PDF), { log }));
    expect(err.code).toBe("NO_DESTINATION");
  });

  it("leaves a file for its next try while the queue is full (queue.maxWaiting), queueing nothing", async () => {
    await door.accept(file("15551234567 - first.pdf", TEST_PDF), { log });
    const full = new PrintDoor({ ...deps(), pressure: testPressure(t.store, 1) });
    const err = await refusal(full.accept(file("15551234568 - second.pdf", TEST_PDF), { log }));
    expect(err.code).toBe("QUEUE_FULL");
    expect(isPrintRefusal(err)).toBe(false);
    expect((await t.store.listJobs()).length).toBe(1);
  });

  it("tells a refusal from trouble of our own, which leaves the file to retry", () => {
    expect(isPrintRefusal(new FaxgateError("DESTINATION_REFUSED", "x"))).toBe(true);
    expect(isPrintRefusal(new FaxgateError("API_AUTH", "x"))).toBe(true);
    expect(isPrintRefusal(new FaxgateError("INTERNAL", "x"))).toBe(false);
    expect(isPrintRefusal(new FaxgateError("STORE_UNAVAILABLE", "x"))).toBe(false);
    expect(isPrintRefusal(new FaxgateError("CONVERTER_BUSY", "x"))).toBe(false);
    expect(isPrintRefusal(new Error("EIO"))).toBe(false);
  });
});
