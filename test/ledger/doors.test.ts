// Rows from the doors, driven through the real thing: a fax mailed to the gateway's SMTP listener
// by a real client is one "sent" row per recipient, by its sender, through the smtp door, with
// each number only as its keyed hash; in the console, a failed and a good sign-in, the job page,
// its document seen and downloaded, its report, and an operator's cancel are each one row, by
// that person, with the client's address.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterEach, describe, expect, it } from "vitest";
import { pdfWithPages } from "../emulator/api.js";
import { emulatorInbound } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testLedger } from "../helpers/ledger.js";
import { TEST_PDF } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { consoleGateway, outboxMails, outboxOf, PASSWORDS, signIn } from "../web/rig.js";

let rig: TestGateway | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

describe("ledger rows from the doors", () => {
  it("a fax mailed in is a sent row per recipient: the sender, the smtp door, the number hashed", async () => {
    rig = await startGateway(consoleGateway({ delayMs: 200 }));
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        to: ["15551234567@fax.example.com", "15557654321@fax.example.com"],
        subject: "two numbers",
        text: "a short letter",
      });
    expect(info.response).toMatch(/^250 /);
    const id = /queued as (\S+)/.exec(info.response)![1]!;
    const ledger = testLedger(rig.gw.store);
    // recorded before the 250: no waiting (the dispatcher's rows may follow: not these)
    const rows = (await ledger.rows({ object: { kind: "job", id } })).filter((r) => r.action === "sent");
    expect(rows.map((r) => [r.action, r.actor, r.door, r.object])).toEqual([
      ["sent", { kind: "person", id: "alice" }, "smtp", { kind: "recipient", id: `${id}#0` }],
      ["sent", { kind: "person", id: "alice" }, "smtp", { kind: "recipient", id: `${id}#1` }],
    ]);
    expect(
      (await ledger.rows({ number: "+15557654321" })).filter((r) => r.action === "sent").map((r) => r.object.id),
    ).toEqual([`${id}#1`]);
    expect(JSON.stringify(rows)).not.toMatch(/5551234567|5557654321/);
    expect((await ledger.verify()).broken).toBeNull();
  }, 120_000);

  it("the console records sign-ins, each read of a sent fax and an operator's cancel", async () => {
    rig = await startGateway(consoleGateway({ delayMs: 200 }));
    // the service is down: the fax waits in the queue, where an operator may cancel it (and the
    // mail says it wants no cover page: a preference the service cannot tell now is not guessed)
    await rig.emu.stop();
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        to: "15551234567@fax.example.com",
        subject: "s [nocover]",
        text: "",
        attachments: [{ filename: "letter.pdf", content: TEST_PDF, contentType: "application/pdf" }],
      });
    const id = /queued as (\S+)/.exec(info.response)![1]!;
    const base = rig.url("web");
    const bad = await fetch(`${base}/login`, {
      method: "POST",
      body: new URLSearchParams({ user: "alice", password: "not-her-password" }),
    });
    expect(bad.status).toBe(401);
    const alice = await signIn(base, "alice", PASSWORDS.alice);
    const get = async (url: string) => {
      const r = await fetch(`${base}${url}`, { headers: { cookie: alice.cookie } });
      expect(r.status, url).toBe(200);
      await r.arrayBuffer();
    };
    await get(`/api/jobs/${id}`);
    await get(`/api/jobs/${id}/documents/0`);
    await get(`/api/jobs/${id}/documents/0?download=1`);
    await get(`/api/jobs/${id}/report`);
    const gw = rig.gw;
    await waitUntil(async () => {
      const job = await gw.store.getJob(id);
      return job?.recipients.every((r) => r.state === "deferred" || r.state === "queued");
    }, "the fax deferred while the service is down");
    const ops = await signIn(base, "ops", PASSWORDS.ops);
    const cancel = await fetch(`${base}/api/jobs/${id}/cancel`, {
      method: "POST",
      headers: { cookie: ops.cookie, "x-csrf-token": ops.csrf },
    });
    expect(cancel.status, await cancel.clone().text()).toBe(200);

    const ledger = testLedger(rig.gw.store);
    const rows = (await ledger.rows()).filter((r) => r.door === "console");
    expect(rows.map((r) => [r.action, r.actor, r.object])).toEqual([
      ["sign-in-failed", { kind: "person" }, { kind: "person", id: "alice" }],
      ["signed-in", { kind: "person", id: "alice" }, { kind: "person", id: "alice" }],
      ["viewed", { kind: "person", id: "alice" }, { kind: "job", id }],
      ["previewed", { kind: "person", id: "alice" }, { kind: "job", id }],
      ["downloaded", { kind: "person", id: "alice" }, { kind: "job", id }],
      ["report-fetched", { kind: "person", id: "alice" }, { kind: "job", id }],
      ["signed-in", { kind: "operator", id: "ops" }, { kind: "person", id: "ops" }],
      ["cancelled", { kind: "operator", id: "ops" }, { kind: "job", id }],
    ]);
    expect(rows.every((r) => r.client === "127.0.0.1")).toBe(true);
    expect(JSON.stringify(rows)).not.toContain("not-her-password");
  }, 120_000);

  it("the dispatcher's outcomes are rows by the service: accepted, then delivered or failed", async () => {
    rig = await startGateway(consoleGateway({ delayMs: 100, config: { queue: { maxFaxTries: 1 } } }));
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        // ...0002: the emulator's "no fax tone", a failure the service reports; ...0009: cancelled there
        to: ["15551234567@fax.example.com", "15550000002@fax.example.com", "15550000009@fax.example.com"],
        subject: "two outcomes",
        text: "a short letter",
      });
    const id = /queued as (\S+)/.exec(info.response)![1]!;
    const gw = rig.gw;
    await waitUntil(async () => {
      const job = await gw.store.getJob(id);
      return job?.recipients.every((r) => r.state === "delivered" || r.state === "failed" || r.state === "cancelled");
    }, "every recipient finished");
    const ledger = testLedger(rig.gw.store);
    const rows = await ledger.rows({ object: { kind: "job", id } });
    const of = (idx: number) =>
      rows.filter((r) => r.object.id === `${id}#${idx}`).map((r) => [r.action, r.actor.kind, r.door]);
    expect(of(0)).toEqual([
      ["sent", "person", "smtp"],
      ["accepted", "service", "gateway"],
      ["delivered", "service", "gateway"],
    ]);
    expect(of(1)).toEqual([
      ["sent", "person", "smtp"],
      ["accepted", "service", "gateway"],
      ["failed", "service", "gateway"],
    ]);
    expect(of(2)).toEqual([
      ["sent", "person", "smtp"],
      ["accepted", "service", "gateway"],
      ["cancelled", "service", "gateway"],
    ]);
    expect((await ledger.rows({ number: "+15550000002" })).map((r) => r.action)).toEqual([
      "sent",
      "accepted",
      "failed",
    ]);
    expect(JSON.stringify(rows)).not.toMatch(/5551234567|5550000002/);
  }, 120_000);

  it("a received fax is routed by its route's name; the inbox's views, takes and forwards are rows", async () => {
    rig = await startGateway(
      consoleGateway({
        outbox: true,
        config: {
          notify: {
            from: "faxgate@example.com",
            inbound: { enabled: true, interval: "1s" },
            // the received fax leaves attached to the mail a forward sends
            attachments: "inbound-only",
          },
          inbound: {
            groups: { referrals: { members: ["alice", "bob"] } },
            routes: [{ name: "referrals line", match: { dialled: "+15550100201" }, deliver: [{ inbox: "referrals" }] }],
          },
        },
      }),
    );
    const messageId = await emulatorInbound(
      rig.emu,
      { email: "alice@example.com", callerId: "+15557654321", to: "+15550100201" },
      await pdfWithPages(1),
      "r.pdf",
    );
    const gw = rig.gw;
    const id = await waitUntil(async () => {
      const k = await gw.store.listReceived({ messageId });
      return k[0] && (await gw.store.listReceivedEvents(k[0].id)).some((e) => e.action === "routed") ? k[0].id : null;
    }, "the received fax kept and routed");

    const base = rig.url("web");
    const bob = await signIn(base, "bob", PASSWORDS.bob);
    const call = async (method: string, url: string, body?: unknown) => {
      const r = await fetch(`${base}${url}`, {
        method,
        headers: { cookie: bob.cookie, "x-csrf-token": bob.csrf, "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      expect(r.status, `${url}: ${await r.clone().text()}`).toBe(200);
      await r.arrayBuffer();
    };
    await call("GET", `/api/inbox/${id}`);
    await call("GET", `/api/inbox/${id}/pdf`);
    await call("GET", `/api/inbox/${id}/pdf?download=1`);
    await call("POST", `/api/inbox/${id}/take`, {});
    await call("POST", `/api/inbox/${id}/release`, {});
    await call("POST", `/api/inbox/${id}/forward`, { user: "alice" });
    await call("POST", `/api/inbox/${id}/forward`, { to: "+15551230001, +15551230002" });

    const ledger = testLedger(rig.gw.store);
    const rows = (await ledger.rows({ object: { kind: "received", id } })).filter((r) => r.action !== "mailed");
    expect(rows.map((r) => [r.action, r.actor, r.door, r.detail])).toEqual([
      ["routed", { kind: "gateway" }, "gateway", { route: "referrals line", deliveries: 1 }],
      ["viewed", { kind: "person", id: "bob" }, "console", { via: "inbox" }],
      ["previewed", { kind: "person", id: "bob" }, "console", {}],
      ["downloaded", { kind: "person", id: "bob" }, "console", {}],
      ["taken", { kind: "person", id: "bob" }, "console", {}],
      ["released", { kind: "person", id: "bob" }, "console", {}],
      ["forwarded", { kind: "person", id: "bob" }, "console", { by: "mail", to: "alice" }],
      ["forwarded", { kind: "person", id: "bob" }, "console", { by: "fax", job: expect.any(String) }],
      ["forwarded", { kind: "person", id: "bob" }, "console", { by: "fax", job: expect.any(String) }],
    ]);
    // the forward by mail carried the PDF out: a mailed row, to alice's mail (her name, not her
    // address); so does each group member's notice of the fax (attachments: inbound-only), whenever
    // the notifier gets to it: one row for each notice sent, the forward's among them
    const mailed = await waitUntil(async () => {
      const notices = await gw.store.listNotifications({ kind: "inbound" });
      if (!notices.some((n) => n.dedupeKey.startsWith("forward:") && n.state === "sent")) return null;
      const sentTo = notices.filter((n) => n.state === "sent").map((n) => n.user);
      const m = (await ledger.rows({ object: { kind: "received", id } })).filter((r) => r.action === "mailed");
      return m.length === sentTo.length ? { m, sentTo } : null;
    }, "the forwarded fax mailed");
    const byTo = (a: unknown[], b: unknown[]) => JSON.stringify(a).localeCompare(JSON.stringify(b));
    expect(mailed.m.map((r) => [r.actor, r.door, r.detail]).sort(byTo)).toEqual(
      mailed.sentTo
        .map((to) => [{ kind: "gateway" }, "gateway", { notice: "inbound", to, faxes: 1, reports: 0 }])
        .sort(byTo),
    );
    expect(mailed.sentTo.filter((to) => to === "alice").length).toBeGreaterThan(0);
    // the caller's number and each number forwarded to: found by their hash, never in clear
    expect((await ledger.rows({ number: "+15557654321" })).map((r) => r.action)).toEqual(["routed"]);
    expect((await ledger.rows({ number: "+15551230002", object: { kind: "received", id } })).length).toBe(1);
    expect(JSON.stringify(rows)).not.toMatch(/5557654321|555123000/);
  }, 120_000);

  it("a known sender's refused mail is a refused row with the refusal's code, never the number", async () => {
    rig = await startGateway(consoleGateway());
    const err = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        // a premium-rate number: the destination policy refuses it at RCPT (553 5.1.3)
        to: "19005550123@fax.example.com",
        subject: "premium",
        text: "a short letter",
      })
      .then(
        () => null,
        (e: Error & { response?: string }) => e.response ?? e.message,
      );
    expect(err).toMatch(/^553 5\.1\.3/);
    const rows = (await testLedger(rig.gw.store).rows()).filter((r) => r.action === "refused");
    expect(rows.map((r) => [r.actor, r.object, r.door, r.client, r.detail.reply])).toEqual([
      [{ kind: "person", id: "alice" }, { kind: "person", id: "alice" }, "smtp", "127.0.0.1", "553 5.1.3"],
    ]);
    expect(typeof rows[0]!.detail.code).toBe("string");
    expect(JSON.stringify(rows)).not.toContain("9005550123");
  }, 120_000);

  it("a mailed link's click is a row (door link); after retention.links it stops working, and that is a row", async () => {
    let offset = 0;
    rig = await startGateway(
      consoleGateway({
        outbox: true,
        clock: { now: () => Date.now() + offset },
        config: {
          notify: { from: "faxgate@example.com", inbound: { enabled: false } },
          retention: { links: "1h" },
        },
      }),
    );
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({ from: "alice@example.com", to: "15551234567@fax.example.com", subject: "s", text: "a letter" });
    const id = /queued as (\S+)/.exec(info.response)![1]!;
    const link = await waitUntil(async () => {
      for (const eml of outboxMails(outboxOf(rig!))) {
        const m = /(http:\/\/\S+\/m\?k=job&id=[A-Za-z0-9_-]+&t=\d+)/.exec(eml);
        if (m && m[1]!.includes(id)) return m[1]!;
      }
      return null;
    }, "the outcome mail's link");
    const click = (cookie?: string) => fetch(link, { redirect: "manual", ...(cookie ? { headers: { cookie } } : {}) });
    const signedOut = await click();
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get("location")).toBe(`fax.html?id=${id}`);
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    expect((await click(alice.cookie)).status).toBe(302);
    offset = 2 * 3600_000;
    const late = await click(alice.cookie);
    expect(late.status).toBe(410);
    expect(await late.text()).toContain("expired");
    const rows = (await testLedger(rig.gw.store).rows({ object: { kind: "job", id } })).filter(
      (r) => r.door === "link",
    );
    expect(rows.map((r) => [r.action, r.actor, r.client, r.detail])).toEqual([
      ["viewed", { kind: "person" }, "127.0.0.1", { result: "followed" }],
      ["viewed", { kind: "person", id: "alice" }, "127.0.0.1", { result: "followed" }],
      ["viewed", { kind: "person", id: "alice" }, "127.0.0.1", { result: "expired" }],
    ]);
  }, 120_000);

  it("the address and confirm links go through the link door: a row per click, 410 once expired or purged", async () => {
    let offset = 0;
    rig = await startGateway(
      consoleGateway({
        outbox: true,
        clock: { now: () => Date.now() + offset },
        config: {
          notify: { from: "faxgate@example.com", inbound: { enabled: false } },
          retention: { links: "1h" },
        },
      }),
    );
    const store = rig.gw.store;
    const waiting = async (kind: "address" | "confirm") => {
      const file = path.join(rig!.dir, `${kind}-${Date.now()}.pdf`);
      await writeFile(file, TEST_PDF);
      const { job } = await store.enqueue({
        source: kind === "address" ? "spool" : "smtp",
        user: "alice",
        recipients: kind === "address" ? [] : [{ number: "+15557654321" }],
        ...(kind === "address" ? { awaitingAddress: true } : { awaitingConfirmation: ["+15557654321"] }),
        documents: [{ path: file, name: "letter.pdf", contentType: "application/pdf" }],
        cover: { enabled: false },
        meta: { origin: { subject: "waiting" } },
      });
      // as the print door and the MX door queue them
      await store.enqueueNotification({
        kind,
        user: "alice",
        jobId: job.id,
        dedupeKey: `${kind}:${job.id}`,
        payload: { jobId: job.id },
      });
      return waitUntil(async () => {
        for (const eml of outboxMails(outboxOf(rig!))) {
          const m = new RegExp(`(http://\\S+/m\\?k=${kind}&id=${job.id}&t=\\d+)`).exec(eml);
          if (m) return { id: job.id, link: m[1]! };
        }
        return null;
      }, `the ${kind} mail's link`);
    };
    const click = (link: string, cookie?: string) =>
      fetch(link, { redirect: "manual", ...(cookie ? { headers: { cookie } } : {}) });

    const address = await waiting("address");
    const confirm = await waiting("confirm");
    const dropped = await waiting("address");
    const signedOut = await click(address.link);
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get("location")).toBe(`address.html?id=${address.id}`);
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const onConfirm = await click(confirm.link, alice.cookie);
    expect(onConfirm.headers.get("location")).toBe(`confirm.html?id=${confirm.id}`);
    const post = (p: string, body?: unknown) =>
      fetch(`${rig!.url("web")}${p}`, {
        method: "POST",
        headers: {
          cookie: alice.cookie,
          "x-csrf-token": alice.csrf,
          ...(body ? { "content-type": "application/json" } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    expect((await post(`/api/jobs/${address.id}/address`, { to: ["+15551234567"] })).status).toBe(200);
    expect((await post(`/api/jobs/${confirm.id}/confirm`)).status).toBe(200);

    // a fax purged under the retention rule: its mailed link answers 410, and says why
    await store.operate(dropped.id, "cancel");
    offset = 60_000;
    // once the cancel's own notice is out (a pending notice keeps its job)
    await waitUntil(async () => (await store.purge(0)) > 0, "the cancelled print purged");
    expect(await store.getJob(dropped.id)).toBeNull();
    const purged = await click(dropped.link, alice.cookie);
    expect(purged.status).toBe(410);
    expect(await purged.text()).toContain("deleted under the retention rule");
    // past retention.links: 410, expired
    offset = 2 * 3600_000;
    const late = await click(confirm.link);
    expect(late.status).toBe(410);
    expect(await late.text()).toContain("This link has expired (retention.links)");

    const ledger = testLedger(store);
    const of = async (id: string) =>
      (await ledger.rows({ object: { kind: "job", id } }))
        .filter((r) => r.door === "link" || r.action === "addressed" || r.action === "confirmed")
        .map((r) => [r.action, r.actor, r.door, r.object.id, r.detail]);
    expect(await of(address.id)).toEqual([
      ["viewed", { kind: "person" }, "link", address.id, { link: "address", result: "followed" }],
      ["addressed", { kind: "person", id: "alice" }, "console", `${address.id}#0`, {}],
    ]);
    expect(await of(confirm.id)).toEqual([
      ["viewed", { kind: "person", id: "alice" }, "link", confirm.id, { link: "confirm", result: "followed" }],
      ["confirmed", { kind: "person", id: "alice" }, "console", `${confirm.id}#0`, {}],
      ["viewed", { kind: "person" }, "link", confirm.id, { link: "confirm", result: "expired" }],
    ]);
    expect(await of(dropped.id)).toEqual([
      ["viewed", { kind: "person", id: "alice" }, "link", dropped.id, { link: "address", result: "purged" }],
    ]);
    // the numbers given and confirmed are found by their keyed hash, never stored in clear
    const byNumber = (await ledger.rows({ number: "+15551234567" })).map((r) => [r.action, r.object.id]);
    expect(byNumber).toContainEqual(["addressed", `${address.id}#0`]);
    expect((await ledger.rows({ number: "+15557654321" })).map((r) => r.action)).toContain("confirmed");
    expect((await ledger.verify()).broken).toBeNull();
  }, 120_000);
});
