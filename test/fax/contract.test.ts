// The client against the emulator over real HTTPS, once per API variant: every endpoint, the
// documented limits at and past their bound, auth and access failures, paging to the last record,
// faults (a dropped connection, 429, 5xx) and the download of the stored PDF.
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument } from "@cantoo/pdf-lib";
import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FaxApiError, type FaxClient } from "../../src/fax/client.js";
import { ApiGate } from "../../src/fax/api-gate.js";
import { isFaxgateError } from "../../src/errors.js";
import type { FaxRecord } from "../../src/fax/types.js";
import { agentFor, clientFor, closeClients, emulatorCall } from "../helpers/client.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { waitUntil } from "../helpers/wait.js";
import { tempFolder } from "../tmp-dir.js";

type Emu = Awaited<ReturnType<typeof startTestEmulator>>;

async function failure(p: Promise<unknown>): Promise<FaxApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FaxApiError);
  return err as FaxApiError;
}

async function pdfWithPages(n: number): Promise<Buffer> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < n; i++) doc.addPage([612, 792]).drawText(`page ${i + 1}`, { x: 72, y: 700, size: 24 });
  return Buffer.from(await doc.save());
}

async function emulatorFaxes(emu: Emu): Promise<Array<Record<string, unknown>>> {
  const body = (await emulatorCall(emu, "GET", "/_emulator/faxes")) as unknown;
  if (Array.isArray(body)) return body as Array<Record<string, unknown>>;
  const o = body as { faxes?: unknown; rows?: unknown };
  return (o.faxes ?? o.rows ?? []) as Array<Record<string, unknown>>;
}

describe.each(["a", "b"] as const)("variant %s", (variant) => {
  let emu: Emu;
  let dir: string;
  let pdf: string;
  let pdfBytes: Buffer;
  let alice: FaxClient;
  let aliceBase: FaxClient;
  let admin: FaxClient;
  const calls: string[] = [];
  const observed = (token: string) =>
    clientFor(emu, token, variant, { observer: (op, status) => calls.push(`${op} ${status}`) });

  beforeAll(async () => {
    emu = await startTestEmulator({ variant, delayMs: 100 });
    dir = tempFolder("test");
    pdfBytes = await pdfWithPages(2);
    pdf = path.join(dir, "two-pages.pdf");
    await writeFile(pdf, pdfBytes);
    alice = clientFor(emu, TEST_KEYS.alice, variant);
    aliceBase = clientFor(emu, TEST_KEYS.aliceBase, variant);
    admin = clientFor(emu, TEST_KEYS.admin, variant);
  });
  afterAll(async () => {
    await closeClients(emu);
    await emu?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await emulatorCall(emu, "PUT", "/_emulator/faults", { latencyMs: 0, errorRate: 0, rateLimitRate: 0, dropRate: 0 });
  });

  describe("account", () => {
    it("ping and me", async () => {
      expect(await alice.ping()).toBeTruthy();
      const me = await alice.me();
      expect(me.email).toBe("alice@example.com");
      expect(me.account.timezone).toBe("America/New_York");
    });
    it("cover pages", async () => {
      const pages = await alice.coverPages();
      expect(Array.isArray(pages)).toBe(true);
      expect(pages.length).toBeGreaterThan(0);
    });
  });

  // So that the normalisation above is exercised: the emulator answers in this variant's own shapes.
  it("answers arrive in the variant's raw shapes, and come out the same", async () => {
    const raw = async (p: string, key: string) => {
      const res = await request(`${emu.baseUrl}${p}`, {
        dispatcher: agentFor(emu),
        headers: { authorization: `Basic ${key}` },
      });
      return (await res.body.json()) as Record<string, unknown>;
    };
    const hist = await raw("/v1/fax/history?limit=2", TEST_KEYS.alice);
    const me = await alice.me();
    const keys = (await raw(`/api-keys?userId=${me.userId}`, TEST_KEYS.admin)) as unknown as Array<
      Record<string, unknown>
    >;
    if (variant === "a") {
      expect(typeof hist.count).toBe("number");
      expect(hist.limit).toBe(2);
      expect(Array.isArray(keys[0]!.accessLevel)).toBe(true);
    } else {
      expect(typeof hist.count).toBe("string");
      expect((hist.query as Record<string, unknown>).limit).toBeDefined();
      expect(typeof keys[0]!.access).toBe("string");
    }
    expect(await alice.history({ limit: 2 })).toMatchObject({ limit: 2, offset: 0, count: Number(hist.count) });
    expect((await admin.listApiKeys(me.userId)).map((k) => k.access).sort()).toEqual(["base", "print_driver"]);
  });

  describe("auth and access", () => {
    it("an unknown key is a permanent API_AUTH", async () => {
      const e = await failure(clientFor(emu, "no-such-key", variant).me());
      expect(e).toMatchObject({ code: "API_AUTH", status: 401, temporary: false, serviceName: "AuthenticationError" });
      expect(e.message).not.toContain("no-such-key");
    });
    it("a print_driver key may not manage keys: API_FORBIDDEN", async () => {
      const me = await alice.me();
      const e = await failure(alice.listApiKeys(me.userId));
      expect(e).toMatchObject({ code: "API_FORBIDDEN", status: 403, temporary: false, serviceName: "NotAllowedError" });
    });
  });

  describe("API keys", () => {
    it("create, use, update, list and delete a key", async () => {
      const me = await alice.me();
      const created = await admin.createApiKey({
        name: `test-${variant}`,
        userId: me.userId,
        access: "base",
        expiresAt: "2030-01-01T00:00:00.000Z",
      });
      expect(created.token).toBeTruthy();
      expect(created.access).toBe("base");
      expect(created.accessLevel).toEqual(["base"]);

      const viaNew = clientFor(emu, created.token!, variant);
      expect((await viaNew.me()).email).toBe("alice@example.com");

      const updated = await admin.updateApiKey(created.uuid, { name: `renamed-${variant}`, access: "print_driver" });
      expect(updated).toMatchObject({
        uuid: created.uuid,
        name: `renamed-${variant}`,
        access: "print_driver",
        accessLevel: ["print_driver"],
      });

      const list = await admin.listApiKeys(me.userId);
      const row = list.find((k) => k.uuid === created.uuid);
      expect(row).toMatchObject({ access: "print_driver", name: `renamed-${variant}` });
      expect(list.every((k) => k.accessLevel.length > 0)).toBe(true);

      await admin.deleteApiKey(created.uuid);
      expect((await admin.listApiKeys(me.userId)).some((k) => k.uuid === created.uuid)).toBe(false);
      expect((await failure(viaNew.me())).code).toBe("API_AUTH");
    });
    it("a key name of 128 characters is accepted, 129 refused before sending", async () => {
      const me = await alice.me();
      const c = observed(TEST_KEYS.admin);
      calls.length = 0;
      const k = await c.createApiKey({ name: "k".repeat(128), userId: me.userId, access: "base" });
      expect(k.name).toHaveLength(128);
      const err = await c
        .createApiKey({ name: "k".repeat(129), userId: me.userId, access: "base" })
        .catch((e: unknown) => e);
      expect(isFaxgateError(err, "API_LIMIT")).toBe(true);
      expect(calls).toEqual(["createApiKey 200"]);
      await admin.deleteApiKey(k.uuid);
    });
  });

  describe("contacts", () => {
    it("lists the seeded contacts with organizations and their members", async () => {
      const page = await alice.listContacts({ limit: 50 });
      expect(page.count).toBeGreaterThanOrEqual(3);
      const names = page.rows.map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(["Acme Billing", "Globex"]));
      const globex = page.rows.find((c) => c.name === "Globex")!;
      expect(globex.isOrganization).toBe(true);
      expect(globex.contacts?.map((c) => c.name)).toContain("Globex Accounts");
      const found = await alice.listContacts({ query: "Acme" });
      expect(found.rows.map((c) => c.name)).toContain("Acme Billing");
    });
    it("pages with offset counting records", async () => {
      const all = await aliceBase.listContacts({ limit: 50, order: "name asc" });
      const second = await aliceBase.listContacts({ limit: 1, offset: 1, order: "name asc" });
      expect(second).toMatchObject({ limit: 1, offset: 1, count: all.count });
      expect(second.rows.map((c) => c.uuid)).toEqual([all.rows[1]!.uuid]);
    });
    it("create, update, delete one, delete several", async () => {
      const a = await aliceBase.createContact({
        name: `Zed ${variant}`,
        faxNumber: "(555) 010-0900",
        email: "zed@example.com",
      });
      expect(a).toMatchObject({ name: `Zed ${variant}`, faxNumber: "(555) 010-0900" });
      const u = await aliceBase.updateContact(a.uuid, { name: `Zed Two ${variant}`, isPublic: false });
      expect(u.name).toBe(`Zed Two ${variant}`);
      await aliceBase.deleteContact(a.uuid);
      expect((await failure(aliceBase.updateContact(a.uuid, { name: "gone" }))).code).toBe("API_NOT_FOUND");

      const b = await aliceBase.createContact({ name: `Bulk 1 ${variant}` });
      const c = await aliceBase.createContact({ name: `Bulk 2 ${variant}` });
      await aliceBase.deleteContacts([b.uuid, c.uuid]);
      const left = await aliceBase.listContacts({ query: `Bulk`, limit: 50 });
      expect(left.rows.filter((x) => x.uuid === b.uuid || x.uuid === c.uuid)).toEqual([]);
    });
  });

  describe("faxes", () => {
    let sent: FaxRecord;

    it("send with a file, follow it to success, read it back", async () => {
      sent = await alice.sendFax({
        faxNumber: "+15551230042",
        files: [{ path: pdf, contentType: "application/pdf" }],
        subject: "Contract test",
        cf: { job: `job-${variant}` },
      });
      expect(sent.messageId).toBeTruthy();
      expect(sent.status).toBe("processing");
      // processing, then transmitting, as the real service reports it, then final
      const info = await waitUntil(
        async () => {
          const i = await alice.faxInfo(sent.messageId);
          return i.status === "processing" || i.status === "transmitting" ? null : i;
        },
        "the fax's final status",
        5000,
      );
      expect(info).toMatchObject({ messageId: sent.messageId, status: "success", resultCode: "0", pagesCount: 2 });
      const stored = (await emulatorFaxes(emu)).find((f) => f.messageId === sent.messageId);
      expect(stored?.cf).toEqual({ job: `job-${variant}` });
    });

    it("download to a file equals the PDF the emulator serves", async () => {
      const dest = path.join(dir, `down-${variant}.pdf`);
      const got = await alice.downloadFax(sent.messageId, dest);
      const raw = await request(`${emu.baseUrl}/v1/fax/${sent.messageId}/download`, {
        dispatcher: agentFor(emu),
        headers: { authorization: `Basic ${TEST_KEYS.alice}` },
      });
      const served = Buffer.from(await raw.body.arrayBuffer());
      const file = await readFile(dest);
      expect(got.bytes).toBe(file.length);
      expect(file.equals(served)).toBe(true);
      expect(got.fileName).toMatch(/\.pdf$/);
      expect((await PDFDocument.load(file)).getPageCount()).toBe(2);
    });

    it("send to many: good numbers succeed, a bad one comes back as a normalised error", async () => {
      const r = await alice.sendFaxToMany({
        recipientFax: ["+15551230043", "12", "+15551230044"],
        coverPage: true,
        subject: "Many",
      });
      expect(r.success.map((f) => f.faxNumber).sort()).toEqual(["+15551230043", "+15551230044"]);
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]).toMatchObject({ recipientFax: "12", name: "InvalidInputError" });
      expect(r.errors[0]!.message).not.toBe("");
    });

    it("resend to another number", async () => {
      const r = await alice.resendFax(sent.messageId, "+15551230045");
      expect(r.success).toHaveLength(1);
      expect(r.success[0]!.faxNumber).toBe("+15551230045");
      expect(r.success[0]!.messageId).not.toBe(sent.messageId);
    });

    it("archive and unarchive", async () => {
      expect((await aliceBase.updateFax(sent.messageId, { isArchived: true })).isArchived).toBe(true);
      const archived = await aliceBase.history({ isArchived: true, limit: 50 });
      expect(archived.rows.map((f) => f.messageId)).toContain(sent.messageId);
      expect((await aliceBase.updateFax(sent.messageId, { isArchived: false })).isArchived).toBe(false);
    });

    it("history with filters and includes", async () => {
      const page = await alice.history({ limit: 5, direction: "outbound", include: ["tags", "contacts"] });
      expect(typeof page.count).toBe("number");
      expect(page).toMatchObject({ limit: 5, offset: 0 });
      expect(page.rows.length).toBeGreaterThan(0);
      expect(page.rows.every((f) => f.direction === "outbound")).toBe(true);
      const q = await alice.history({ query: sent.messageId });
      expect(q.rows.map((f) => f.messageId)).toEqual([sent.messageId]);
    });

    it("historyAll walks every page to the last record", async () => {
      const mine = new Set<string>();
      const r = await aliceBase.sendFaxToMany({
        recipientFax: Array.from({ length: 7 }, (_, i) => `+1555123010${i}`),
        coverPage: true,
      });
      for (const f of r.success) mine.add(f.messageId);
      const total = (await aliceBase.history({ limit: 1 })).count;
      expect(total).toBeGreaterThan(7);
      const c = observed(TEST_KEYS.aliceBase);
      calls.length = 0;
      const seen: string[] = [];
      for await (const f of c.historyAll({ limit: 3 })) seen.push(f.messageId);
      expect(seen).toHaveLength(total);
      expect(new Set(seen).size).toBe(total);
      for (const id of mine) expect(seen).toContain(id);
      // one call more than the pages at most: the first walk asks offset=1 to learn how offset counts
      expect(calls.length).toBeLessThanOrEqual(Math.ceil(total / 3) + 1);
    });

    it("delete, then it is gone: its record says when, and that its file is purged", async () => {
      const f = await aliceBase.sendFax({ faxNumber: "+15551230046", coverPage: true });
      await aliceBase.deleteFax(f.messageId);
      // the record stays readable with deletedAt and isFilePurged (fax-api.md's record fields),
      // which is how retention checks a delete took (src/retention/)
      const info = await aliceBase.faxInfo(f.messageId);
      expect(info.deletedAt).toMatch(/^\d{4}-/);
      expect(info.isFilePurged).toBe(true);
    });

    it("every cover field limit: at the bound accepted, one past refused before sending", async () => {
      const c = observed(TEST_KEYS.alice);
      const fields: Array<[string, number, string]> = [
        ["recipientName", 40, "r"],
        ["senderName", 40, "s"],
        ["subject", 55, "j"],
        ["callerId", 10, "5"],
      ];
      for (const [field, max, ch] of fields) {
        calls.length = 0;
        const ok = await c.sendFax({ faxNumber: "+15551230047", coverPage: true, [field]: ch.repeat(max) });
        expect(ok.messageId).toBeTruthy();
        const err = await c
          .sendFax({ faxNumber: "+15551230047", coverPage: true, [field]: ch.repeat(max + 1) })
          .catch((e: unknown) => e);
        expect(isFaxgateError(err, "API_LIMIT")).toBe(true);
        expect((err as { field?: string }).field).toBe(field);
        expect(calls).toEqual(["sendFax 200"]);
      }
      // notes: one past the bound is refused here; at the bound, see the next test
      calls.length = 0;
      expect(
        isFaxgateError(
          await c
            .sendFax({ faxNumber: "+15551230047", coverPage: true, notes: "n".repeat(4001) })
            .catch((e: unknown) => e),
          "API_LIMIT",
        ),
      ).toBe(true);
      expect(calls).toEqual([]);
      expect((await c.history({ limit: 500 })).limit).toBe(500);
      expect(isFaxgateError(await c.history({ limit: 501 }).catch((e: unknown) => e), "API_LIMIT")).toBe(true);
      expect(calls).toEqual(["history 200"]);
    });
    // The document allows 4000 characters of cover notes; they need more than one cover page.
    it("cover notes of 4000 characters are accepted by the service", async () => {
      const notes = "Please call back about the enclosed records. ".repeat(100).slice(0, 4000);
      const ok = await alice.sendFax({ faxNumber: "+15551230047", coverPage: true, notes });
      expect(ok.messageId).toBeTruthy();
      // one unbroken word of 4000 characters must be wrapped too
      const word = await alice.sendFax({ faxNumber: "+15551230047", coverPage: true, notes: "n".repeat(4000) });
      expect(word.messageId).toBeTruthy();
    });
  });

  describe("faults", () => {
    it("a dropped connection after the fax was created: outcome unknown, and the fax exists", async () => {
      await emulatorCall(emu, "PUT", "/_emulator/faults", { dropRate: 1 });
      const before = (await emulatorFaxes(emu)).length;
      const e = await failure(
        alice.sendFax({ faxNumber: "+15551230048", coverPage: true, cf: { drop: `drop-${variant}` } }),
      );
      expect(e).toMatchObject({ code: "API_OUTCOME_UNKNOWN", outcomeUnknown: true, temporary: true });
      await emulatorCall(emu, "PUT", "/_emulator/faults", { dropRate: 0 });
      const after = await emulatorFaxes(emu);
      expect(after.length).toBe(before + 1);
      expect(after.some((f) => (f.cf as Record<string, string> | undefined)?.drop === `drop-${variant}`)).toBe(true);
    });
    it("429 surfaces retryAfterMs", async () => {
      await emulatorCall(emu, "PUT", "/_emulator/faults", { rateLimitRate: 1 });
      const e = await failure(alice.history());
      expect(e).toMatchObject({ code: "API_RATE_LIMITED", status: 429, temporary: true, outcomeUnknown: false });
      expect(e.retryAfterMs).toBeGreaterThan(0);
    });
    it("a 429 slows down the gate the client calls through, for every caller", async () => {
      const gate = new ApiGate({ ratePerSecond: 20, concurrency: 4, dispatchShare: 0.5, historyPerMinute: 8 });
      const gated = clientFor(emu, TEST_KEYS.alice, variant, { gate });
      await emulatorCall(emu, "PUT", "/_emulator/faults", { rateLimitRate: 1 });
      expect(await failure(gated.listContacts())).toMatchObject({ code: "API_RATE_LIMITED" });
      expect(gate.currentRate()).toBe(10);
      expect(gate.rateRefused).toBe(1);
    });
    it("5xx is temporary, and a send refused with one did not happen", async () => {
      const before = (await emulatorFaxes(emu)).length;
      await emulatorCall(emu, "PUT", "/_emulator/faults", { errorRate: 1 });
      const e = await failure(alice.sendFax({ faxNumber: "+15551230049", coverPage: true }));
      expect(e).toMatchObject({ code: "API_SERVER", temporary: true, outcomeUnknown: false });
      expect(e.status).toBeGreaterThanOrEqual(500);
      expect(await emulatorFaxes(emu)).toHaveLength(before);
    });
  });
});
