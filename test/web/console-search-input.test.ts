// Text with a NUL (or another control character) typed into the console, on both queue backends
// over real HTTP: refused as bad input naming the field, never "the queue store is not reachable",
// and nothing queued. PostgreSQL cannot hold a NUL in text and refuses the whole statement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_PDF } from "../helpers/store.js";
import { PASSWORDS, signIn, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("console search input on PostgreSQL");

for (const backend of ["sqlite", "postgres"] as const) {
  describe.skipIf(postgres.skips(backend))(`console text input on ${backend}`, () => {
    let rig: TestGateway;
    beforeAll(async () => {
      rig = await startGateway(
        consoleGateway({
          delayMs: 60_000,
          config: backend === "postgres" ? { database: await postgres.database() } : {},
        }),
      );
    }, 60_000);
    afterAll(async () => {
      await rig?.stop();
    });

    it("a NUL in a search is refused by name (400), and a plain search still works", async () => {
      const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
      for (const q of ["%00", "abc%00def", "%07"]) {
        const r = await fetch(`${rig.url("web")}/api/jobs?search=${q}`, { headers: { cookie: s.cookie } });
        const body = (await r.json()) as { error: string };
        expect(r.status, q).toBe(400);
        expect(body.error).toMatch(/^search: contains a control character \(U\+00(00, NUL|07)\)/);
        expect(body.error).not.toMatch(/not reachable/);
      }
      const ok = await fetch(`${rig.url("web")}/api/jobs?search=abc`, { headers: { cookie: s.cookie } });
      expect(ok.status).toBe(200);
      // the store says the same to any other caller
      await expect(rig.gw.store.listJobs({ search: "a\u0000" })).rejects.toMatchObject({
        code: "USAGE",
        message: expect.stringMatching(/^search: /),
      });
    });

    it("a NUL in a new fax's subject, notes or file name is refused by name and queues nothing", async () => {
      const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
      const before = await rig.gw.store.countJobs({});
      for (const [field, fields, file] of [
        ["subject", { subject: "a\u0000b" }, "page.pdf"],
        ["notes", { notes: "x\u0000" }, "page.pdf"],
        ["file name", {}, "pa\u0000ge.pdf"],
      ] as const) {
        const fd = new FormData();
        fd.append("to", "5550104242");
        for (const [k, v] of Object.entries(fields)) fd.append(k, v);
        fd.append("files", new Blob([TEST_PDF], { type: "application/pdf" }), file);
        const r = await fetch(`${rig.url("web")}/api/faxes`, {
          method: "POST",
          headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
          body: fd,
        });
        const body = (await r.json()) as { error: string };
        expect(r.status, `${field}: ${body.error}`).toBe(400);
        expect(body.error).toMatch(new RegExp(`^${field}: contains a control character`));
      }
      expect(await rig.gw.store.countJobs({})).toBe(before);
    });
  });
}
