// `faxgate store migrate`: an SQLite queue with jobs in every state, documents, notifications and
// state keys, and the later tables (received faxes, texts, signed uses, factors...), copied into a
// real PostgreSQL and read back through its store's operations; a rerun copies nothing twice;
// a running daemon's queue is refused. One run through the real CLI, with the password hidden.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { DaemonLock } from "../../src/store/daemon-lock.js";
import { migrateSqliteToPostgres } from "../../src/store/postgres/migrate-sqlite.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { Job } from "../../src/store/types.js";
import { LegalHolds } from "../../src/retention/legal-holds.js";
import { runCli } from "../helpers/cli.js";
import { testLedger } from "../helpers/ledger.js";
import { docFile, newJob, receivedInput } from "../helpers/store.js";
import { listDeliveries, queueDeliveries } from "../../src/store/sql/deliveries.js";
import { directoryEntry, writeDirectoryEntry } from "../../src/store/sql/directory.js";
import { PersonKeys } from "../../src/store/sql/person-keys.js";
import { claimText, getReceivedText, textRead } from "../../src/store/sql/received-text.js";
import { linkReply } from "../../src/store/sql/reply-links.js";
import { listServicePurges, queueServiceCopies } from "../../src/store/sql/retention.js";
import { searchFaxes, searchWords } from "../../src/store/sql/search.js";
import { claimSentText, getSentText, queueSentTexts, sentTextRead } from "../../src/store/sql/sent-text.js";
import { SignInFactors } from "../../src/store/sql/sign-in-factors.js";
import { openBackend, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("store migrate tests");

/** An SQLite queue with a job in every state there is. */
async function busyQueue(s: QueueStore, dir: string): Promise<void> {
  const k = (jobId: string, idx = 0) => ({ jobId, idx });
  const one = async (n: string, extra = {}) =>
    (await s.enqueue(newJob(dir, { recipients: [{ number: n, name: `name ${n}` }], ...extra }))).job;
  // a mail whose PDF is kept once: its original without the PDF's base64 (store/spliced-original.ts)
  const pdf = Buffer.concat([Buffer.from("%PDF-1.4\n"), randomBytes(9_000)]);
  const lines = (pdf.toString("base64").match(/.{1,76}/g) ?? []).join("\r\n");
  await one("+15550000100", {
    cover: { enabled: true, subject: "still queued" },
    documents: [{ path: path.join(dir, "mail.pdf"), name: "mail.pdf", contentType: "application/pdf", data: pdf }],
    original: {
      path: path.join(dir, "message.eml"),
      name: "message.eml",
      contentType: "message/rfc822",
      data: Buffer.from(`From: x\r\nContent-Transfer-Encoding: base64\r\n\r\n${lines}\r\n`),
    },
  });
  // a small document given as bytes: the SQLite store keeps it in its database, not as a file
  const held = await one("+15550000101", {
    documents: [
      {
        path: path.join(dir, "not-a-file.txt"),
        name: "page.txt",
        contentType: "text/plain",
        data: Buffer.from("kept in the database"),
      },
    ],
  });
  await s.operate(held.id, "hold");
  const sending = await one("+15550000102");
  const deferred = await one("+15550000103");
  const processing = await one("+15550000104");
  const delivered = await one("+15550000105");
  const failed = await one("+15550000106");
  const unknown = await one("+15550000107");
  const cancelled = await one("+15550000108");
  await s.operate(cancelled.id, "cancel");
  const partial = (
    await s.enqueue(newJob(dir, { recipients: [{ number: "+15550000109" }, { number: "+15550000110" }] }))
  ).job;
  const groups = await s.claimDue("old-run", 20, 60_000);
  const send = (id: string) => groups.find((g) => g.job.id === id)!.sendId;
  expect(groups.some((g) => g.job.id === sending.id)).toBe(true);
  await s.defer(k(deferred.id), {
    error: "busy",
    nextAttemptAt: new Date(Date.now() + 3600_000),
    sendId: send(deferred.id),
    faxTry: true,
  });
  await s.markAccepted(k(processing.id), send(processing.id), { messageId: "msg-proc" });
  await s.markAccepted(k(delivered.id), send(delivered.id), { messageId: "msg-del" });
  await s.complete(k(delivered.id), { resultCode: "0", resultInfo: "OK", pagesComplete: 1, duration: 30 });
  await s.fail(k(failed.id), { reason: "no answer", sendId: send(failed.id) });
  await s.markUnknown(k(unknown.id), send(unknown.id), "connection dropped");
  await s.markAccepted(k(partial.id, 0), send(partial.id), { messageId: "msg-p0" });
  await s.complete(k(partial.id, 0), { resultCode: "0" });
  await s.fail(k(partial.id, 1), { reason: "busy", sendId: send(partial.id) });
  await one("+15550000111"); // after the claim: stays queued
  await s.enqueueCorrupt({
    source: "smtp",
    user: "alice",
    reason: "broken MIME",
    original: { path: docFile(dir, "garbage"), name: "message.eml", contentType: "message/rfc822" },
  });
  const n = (await s.claimNotifications("n", 1, 60_000))[0]!;
  await s.completeNotification(n.id, "sent");
  await s.setState("inbound:alice", '{"cursor":42}');
  await s.setState("first-start", "done");
}

/** A job as both backends must show it: document paths differ by design (a folder vs a cache). */
const comparable = (j: Job) => ({
  ...j,
  documents: j.documents.map((d) => ({ ...d, path: path.basename(d.path) })),
  original: j.original ? { ...j.original, path: path.basename(j.original.path) } : null,
});

describe.skipIf(postgres.missing !== null)("faxgate store migrate", () => {
  it("copies every job, recipient, document, notification and state key; a rerun copies nothing twice", async () => {
    const src = await openBackend("sqlite", null);
    try {
      await busyQueue(src.store, src.dir);
      const dataDir = path.join(src.dir, "data");
      const url = await postgres.database();
      const report = await migrateSqliteToPostgres({ dataDir, url });
      expect(report.source.jobs).toBe(12);
      expect(report.copied).toEqual(report.source);
      const pgs = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        const before = await src.store.listJobs();
        const after = await pgs.listJobs();
        expect(new Set(before.map((j) => j.state))).toEqual(
          new Set(["queued", "held", "active", "delivered", "failed", "partial", "cancelled", "corrupt"]),
        );
        expect(after.map(comparable)).toEqual(before.map(comparable));
        expect(before.filter((j) => j.original?.spliced)).toHaveLength(1);
        for (const j of before) {
          const events = await src.store.listEvents(j.id);
          expect(events.length).toBeGreaterThan(0);
          expect(await pgs.listEvents(j.id)).toEqual(events);
          const docs = [...j.documents, ...(j.original ? [j.original] : [])];
          const pj = (await pgs.getJob(j.id))!;
          const pdocs = [...pj.documents, ...(pj.original ? [pj.original] : [])];
          for (let i = 0; i < docs.length; i++)
            expect((await pgs.readDocument(pdocs[i]!)).equals(await src.store.readDocument(docs[i]!))).toBe(true);
        }
        const strip = (ns: Awaited<ReturnType<QueueStore["listNotifications"]>>) =>
          ns.map(({ id: _id, ...rest }) => rest).sort((a, b) => a.dedupeKey.localeCompare(b.dedupeKey));
        expect(strip(await pgs.listNotifications())).toEqual(strip(await src.store.listNotifications()));
        expect(await pgs.getState("inbound:alice")).toBe('{"cursor":42}');
        expect(await pgs.getState("first-start")).toBe("done");
        expect((await pgs.counts()).jobs).toEqual((await src.store.counts()).jobs);
        // the copied queue works: the queued job is claimed by the new store
        expect((await pgs.claimDue("new", 10, 60_000)).map((g) => g.recipients[0]!.number)).toEqual(["+15550000111"]);
      } finally {
        await pgs.close();
      }
      const again = await migrateSqliteToPostgres({ dataDir, url });
      expect(again.copied).toEqual(Object.fromEntries(Object.keys(report.source).map((k) => [k, 0])));
      expect(again.alreadyThere).toBe(12);
    } finally {
      await src.cleanup();
    }
  });

  it("copies the ledger as written (its chain verifies there) and the legal holds; a rerun adds the rows since", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const ledger = testLedger(src.store);
      const holds = new LegalHolds({ store: src.store, ledger });
      await ledger.record({
        action: "sent",
        actor: { kind: "person", id: "alice" },
        object: { kind: "recipient", id: "j1#0" },
        door: "smtp",
        number: "+15550107788",
      });
      const held = await holds.add({
        kind: "number",
        value: "+15550107788",
        reason: "matter 7",
        by: "ops",
        door: "cli",
      });
      await holds.add({ kind: "user", value: "bob", reason: "matter 8", by: "ops", door: "cli" });
      await holds.release(held.id, { by: "ops", reason: "matter closed", door: "cli" });
      const dataDir = path.join(src.dir, "data");
      const url = await postgres.database();
      const report = await migrateSqliteToPostgres({ dataDir, url });
      expect(report.source).toMatchObject({ ledger: 4, holds: 2 });
      expect(report.copied).toMatchObject({ ledger: 4, holds: 2 });
      const pgs = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        const there = testLedger(pgs);
        expect(await there.verify()).toMatchObject({ rows: 4, broken: null });
        expect(await there.head()).toEqual(await ledger.head());
        // the number is found by the same keyed hash on the new store
        expect((await there.rows({ number: "+1 555 010 7788" })).map((r) => r.action)).toEqual([
          "sent",
          "held",
          "hold-released",
        ]);
        const active = await new LegalHolds({ store: pgs, ledger: there }).list();
        expect(active.map((h) => [h.kind, h.value])).toEqual([["user", "bob"]]);
      } finally {
        await pgs.close();
      }
      // rows written since on SQLite follow on a rerun; the chain goes on verifying
      await ledger.record({
        action: "viewed",
        actor: { kind: "person", id: "alice" },
        object: { kind: "job", id: "j1" },
        door: "console",
      });
      const again = await migrateSqliteToPostgres({ dataDir, url });
      expect(again.copied).toMatchObject({ ledger: 1, holds: 0 });
      const pgs2 = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        expect(await testLedger(pgs2).verify()).toMatchObject({ rows: 5, broken: null });
        // a PostgreSQL ledger with a chain of its own is not joined to this one
        const other = await postgres.database();
        const pgo = await PgStore.open({ url: other, dataDir: path.join(src.dir, "pg-other") });
        await testLedger(pgo).record({
          action: "signed-in",
          actor: { kind: "person", id: "x" },
          object: { kind: "person", id: "x" },
          door: "console",
        });
        await testLedger(pgo).sealer.sealNow(); // its chain's row 1, sealed
        await pgo.close();
        await expect(migrateSqliteToPostgres({ dataDir, url: other })).rejects.toThrow(/another chain \(row 1 differs/);
      } finally {
        await pgs2.close();
      }
    } finally {
      await src.cleanup();
    }
  });

  it("copies received faxes, texts, deliveries, signed uses, purges, factors, keys and the directory", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const s = src.store;
      const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x80, 0x0a]); // bytes no text encoding keeps
      const { fax } = await s.keepReceived(
        receivedInput({
          csid: "DR SMITH CLINIC",
          pages: 2,
          receivedAt: "2026-11-20T10:00:00.000Z",
          groups: ["referrals"],
          document: pdf,
          detail: "webhook",
          readText: { waitsUntil: null },
        }),
      );
      const claimed = (await claimText(s.sql, { leaseMs: 60_000, pick: (u) => u[0]! }))!;
      await textRead(s.sql, claimed.faxId, { body: "Referral for Maria Alvarez", pdf: null, pages: 2 });
      await s.changeReceived(fax.id, {
        set: { state: "taken", owner: "alice", note: "calling back" },
        event: { action: "taken", actor: "alice", detail: null },
      });
      // a sent job, delivered, its text read; the received fax answered it
      const { job } = await s.enqueue(newJob(src.dir, { user: "alice", recipients: [{ number: "+15551230777" }] }));
      await s.sql.run("UPDATE jobs SET state = 'delivered', finished_at = ?, updated_at = ? WHERE id = ?", [
        "2026-11-19T10:00:00.000Z",
        "2026-11-19T10:00:00.000Z",
        job.id,
      ]);
      await queueSentTexts(s.sql, { since: "2026-01-01T00:00:00.000Z", changedSince: "2026-01-01T00:00:00.000Z" });
      const sent = (await claimSentText(s.sql, { leaseMs: 60_000, pick: (u) => u[0]! }))!;
      await sentTextRead(s.sql, sent.jobId, { body: "Cardiology appointment for Alvarez", pages: 1 });
      expect(await linkReply(s.sql, { faxId: fax.id, jobId: job.id })).toBe(true);
      await queueDeliveries(s.sql, [
        { faxId: fax.id, target: "fhir:ehr", kind: "fhir", rule: "referrals", owner: "alice", spec: { base: "x" } },
      ]);
      const use = { keys: ["dkim:k1"], recipients: ["+15550001234"], purgeBefore: new Date(0) };
      expect(await s.useSignedMessage({ ...use, claim: "mail-1" })).toEqual({ ok: true });
      expect(
        await queueServiceCopies(
          s.sql,
          { jobs: "2000-01-01T00:00:00.000Z", received: "2030-01-01T00:00:00.000Z" },
          () => "2027-01-01T00:00:00.000Z",
        ),
      ).toBe(1);
      const factors = new SignInFactors(s.sql);
      await factors.add({
        id: "f-1",
        user: "alice",
        kind: "totp",
        name: "phone",
        credentialId: null,
        publicKey: null,
        transports: [],
        sealedSecret: "sealed-secret-stand-in",
        createdAt: "2026-11-01T00:00:00.000Z",
      });
      expect(await factors.takeStep("f-1", 100, "2026-11-02T00:00:00.000Z")).toBe(true);
      await new PersonKeys(s.sql).putKey("alice", {
        keyId: "key-1",
        serviceUserId: "svc-user-1",
        sealedToken: "sealed-token-stand-in",
        access: "send",
        expiresAt: null,
      });
      await writeDirectoryEntry(
        s.sql,
        "user",
        "u-1",
        () => ({ name: "Alice", externalId: "ext-1", body: { userName: "Alice", active: true } }),
        (n) => new Error(`taken: ${n}`),
      );

      const dataDir = path.join(src.dir, "data");
      const url = await postgres.database();
      const report = await migrateSqliteToPostgres({ dataDir, url });
      expect(report.source).toMatchObject({
        receivedFaxes: 1,
        receivedEvents: (await s.listReceivedEvents(fax.id)).length, // stored, text read, taken, reply to
        receivedText: 1,
        deliveries: 1,
        sentText: 1,
        signedUses: 1,
        servicePurges: 1,
        signInFactors: 1,
        personKeys: 1,
        directoryEntries: 1,
      });
      expect(report.copied).toEqual(report.source);
      const pgs = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        const p = pgs.sql;
        // the received fax, its document bytes, its timeline (the reply link both ways) and its text
        expect(await pgs.getReceived(fax.id)).toEqual(await s.getReceived(fax.id));
        expect((await pgs.listReceived()).map((f) => f.id)).toEqual([fax.id]);
        expect((await pgs.readReceivedDocument(fax.id))!.equals(pdf)).toBe(true);
        expect(await pgs.listReceivedEvents(fax.id)).toEqual(await s.listReceivedEvents(fax.id));
        expect((await pgs.listEvents(job.id)).some((e) => e.transition === "reply" && e.detail === fax.id)).toBe(true);
        expect(await getReceivedText(p, fax.id)).toEqual(await getReceivedText(s.sql, fax.id));
        expect(await getSentText(p, job.id)).toEqual(await getSentText(s.sql, job.id));
        // PostgreSQL's own words (its generated column) find both texts
        const hits = await searchFaxes(p, { words: searchWords("Alvarez"), visibleTo: "all", limit: 10 });
        expect(hits.map((h) => (h.kind === "received" ? h.fax.id : h.job.id)).sort()).toEqual([fax.id, job.id].sort());
        expect(await listDeliveries(p)).toEqual(await listDeliveries(s.sql));
        // the signed mail stays used: a copy of it is refused for that number on the fleet
        expect(await pgs.useSignedMessage({ ...use, claim: "mail-copy" })).toMatchObject({ ok: false });
        expect(await listServicePurges(p)).toEqual(await listServicePurges(s.sql));
        // the enrolment stays, and the TOTP code used before stays used
        expect(await new SignInFactors(p).of("alice")).toEqual(await factors.of("alice"));
        expect(await new SignInFactors(p).takeStep("f-1", 100, "2026-11-03T00:00:00.000Z")).toBe(false);
        expect(await new PersonKeys(p).all()).toEqual(await new PersonKeys(s.sql).all());
        expect(await directoryEntry(p, "user", "u-1")).toEqual(await directoryEntry(s.sql, "user", "u-1"));
      } finally {
        await pgs.close();
      }
      const again = await migrateSqliteToPostgres({ dataDir, url });
      expect(again.copied).toEqual(Object.fromEntries(Object.keys(report.source).map((k) => [k, 0])));
      expect(again.source).toEqual(report.source);
    } finally {
      await src.cleanup();
    }
  });

  it("copies a table past its first page: the copier reads 100 rows at a time", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const s = src.store;
      for (let i = 0; i < 250; i++)
        expect(
          await s.useSignedMessage({
            keys: [`dkim:k${i}`],
            recipients: ["+15550001234"],
            purgeBefore: new Date(0),
            claim: `mail-${i}`,
          }),
        ).toEqual({ ok: true });
      const url = await postgres.database();
      const report = await migrateSqliteToPostgres({ dataDir: path.join(src.dir, "data"), url });
      expect(report.source.signedUses).toBe(250);
      expect(report.copied.signedUses).toBe(250);
    } finally {
      await src.cleanup();
    }
  });

  it("refuses an SQLite ledger with unsealed rows, copying nothing", async () => {
    const src = await openBackend("sqlite", null);
    try {
      await src.store.enqueue(newJob(src.dir));
      // SQLite seals each row as it writes; a row left here would be lost, the table is not copied
      await src.store.sql.run(
        `INSERT INTO ledger_pending (at, action, actor_kind, object_kind, object_id, door, detail)
         VALUES ('2026-11-01T00:00:00.000Z', 'sent', 'person', 'job', 'j1', 'smtp', '{}')`,
      );
      const url = await postgres.database();
      await expect(migrateSqliteToPostgres({ dataDir: path.join(src.dir, "data"), url })).rejects.toThrow(
        /1 unsealed rows/,
      );
      const pgs = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        expect(await pgs.listJobs()).toEqual([]);
      } finally {
        await pgs.close();
      }
    } finally {
      await src.cleanup();
    }
  });

  it("refuses while a daemon holds the queue", async () => {
    const src = await openBackend("sqlite", null);
    const dataDir = path.join(src.dir, "data");
    const lock = DaemonLock.acquire(dataDir);
    try {
      await migrateSqliteToPostgres({ dataDir, url: await postgres.database() });
      throw new Error("expected ALREADY_RUNNING");
    } catch (err) {
      expect(isFaxgateError(err, "ALREADY_RUNNING")).toBe(true);
    } finally {
      lock.release();
      await src.cleanup();
    }
  });

  it("through the CLI: prints counts and the URL without its password", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const { id } = (await src.store.enqueue(newJob(src.dir))).job;
      await src.store.close();
      const url = await postgres.database();
      const withPw = url.replace("postgres@", "postgres:Hidden-Pw-77@"); // trust auth: any password is accepted
      const cfg = path.join(src.dir, "faxgate.yaml");
      mkdirSync(path.join(src.dir, "data"), { recursive: true });
      writeFileSync(
        cfg,
        `api: {baseUrl: sandbox}\ndata: ./data\ndatabase: "${withPw.replace("Hidden-Pw-77", "${DBPW}")}"\nusers: []\n`,
      );
      const r = await runCli(["store", "migrate", "--config", cfg], { env: { DBPW: "Hidden-Pw-77" } });
      expect(r.stderr + r.stdout).not.toContain("Hidden-Pw-77");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("copied: 1 jobs, 1 recipients, 1 documents");
      expect(r.stdout).toContain("copied also: 0 received faxes, 0 received fax events,");
      expect(r.stdout).toContain("verified");
      expect(r.stderr).toContain("postgres:***@");
      // the CLI reads the queue from PostgreSQL now that the config names it, from a fresh data folder
      writeFileSync(cfg, readFileSync(cfg, "utf8").replace("data: ./data", "data: ./other-host-data"));
      const jobs = await runCli(["jobs", "--json", "--config", cfg], { env: { DBPW: "Hidden-Pw-77" } });
      expect(jobs.code).toBe(0);
      expect((JSON.parse(jobs.stdout) as Array<{ id: string }>).map((j) => j.id)).toEqual([id]);
    } finally {
      await src.cleanup();
    }
  });
});
