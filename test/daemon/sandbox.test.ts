// The README's first command, as a new user runs it: `faxgate start` with no config, in an empty
// folder, then a mail and a dropped file going through to notification files in the outbox.
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrometheus, runCli, spawnCli } from "../helpers/cli.js";
import { OutputWatch, waitUntil } from "../helpers/wait.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { tempFolder } from "../tmp-dir.js";

async function makePdf(text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([612, 792]);
  page.drawText(text, { x: 72, y: 700, size: 14, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

interface Running {
  child: ChildProcess;
  out: OutputWatch;
  err: OutputWatch;
  smtpPort: number;
  adminPort: number;
}

async function startSandbox(cwd: string, extra: string[] = []): Promise<Running> {
  const child = spawnCli(
    [
      "start",
      "--smtp-listen",
      "127.0.0.1:0",
      "--admin-listen",
      "127.0.0.1:0",
      "--web-listen",
      "127.0.0.1:0",
      "--delay-ms",
      "300",
      ...extra,
    ],
    { cwd },
  );
  const out = new OutputWatch(child.stdout!);
  const err = new OutputWatch(child.stderr!);
  const smtp = await err.waitFor(/SMTP \(mail to fax\)\s+127\.0\.0\.1:(\d+)/, 60_000);
  const admin = await err.waitFor(/Health and metrics\s+http:\/\/127\.0\.0\.1:(\d+)/);
  return { child, out, err, smtpPort: Number(smtp[1]), adminPort: Number(admin[1]) };
}

function stop(r: Running, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  return new Promise((resolve) => {
    if (r.child.exitCode !== null) return resolve(r.child.exitCode);
    r.child.once("exit", (code) => resolve(code));
    r.child.kill(signal);
  });
}

function mailer(port: number) {
  return nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true });
}

async function jobsIn(cwd: string) {
  const store = SqliteStore.open({ dataDir: path.join(cwd, "data") });
  try {
    return await store.listJobs({});
  } finally {
    store.close();
  }
}

function outbox(cwd: string): string[] {
  try {
    return readdirSync(path.join(cwd, "data", "outbox")).filter((f) => f.endsWith(".eml"));
  } catch {
    return [];
  }
}

describe("sandbox start (README quick start)", () => {
  let cwd: string;
  let run: Running;

  beforeAll(async () => {
    cwd = tempFolder("sandbox");
    run = await startSandbox(cwd);
  }, 90_000);

  afterAll(async () => {
    if (run) await stop(run, "SIGKILL");
    rmSync(cwd, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });

  it("prints a banner that says how to try it", () => {
    const banner = run.err.text;
    expect(banner).toContain("SANDBOX");
    expect(banner).toMatch(/swaks --server 127\.0\.0\.1:\d+ --from demo@localhost --to 15551234567@fax\.localhost/);
    expect(banner).toMatch(/curl -sS -v smtp:\/\/127\.0\.0\.1:\d+ .*--mail-rcpt 15551234567@fax\.localhost/);
    expect(banner).toContain(path.join("spool", "demo"));
    expect(banner).toContain(path.join("data", "outbox"));
  });

  it("accepts a mail, faxes it, and writes the outcome mail to the outbox", async () => {
    const info = await mailer(run.smtpPort).sendMail({
      from: "Demo User <demo@localhost>",
      to: "15551234567@fax.localhost",
      subject: "Invoice 42",
      text: "Please find the invoice attached.",
      attachments: [{ filename: "invoice-42.pdf", content: await makePdf("Invoice 42") }],
    });
    const m = /^250 .*?([A-Za-z0-9]{6,})\s*$/.exec(info.response);
    expect(m, info.response).toBeTruthy();
    const jobId = m![1]!;
    const job = await waitUntil(
      async () => (await jobsIn(cwd)).find((j) => j.id === jobId && j.state === "delivered"),
      "the job to be delivered",
      30_000,
      200,
    );
    expect(job.source).toBe("smtp");
    expect(job.recipients[0]!.number).toBe("+15551234567");
    expect(job.recipients[0]!.messageId).toBeTruthy();
    const eml = await waitUntil(
      () =>
        outbox(cwd)
          .map((f) => readFileSync(path.join(cwd, "data", "outbox", f), "utf8"))
          .find((t) => t.includes(jobId)),
      "the outcome mail",
      30_000,
      200,
    );
    expect(eml).toMatch(/^Subject: .*delivered/im);
    expect(eml).toMatch(/^To: .*demo@localhost/im);
  });

  it("faxes a file dropped into the print folder", async () => {
    const folder = path.join(cwd, "spool", "demo");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "15551234568 - Hello.pdf"), await makePdf("Hello by print"));
    const job = await waitUntil(
      async () => (await jobsIn(cwd)).find((j) => j.source === "spool" && j.state === "delivered"),
      "the spool job to be delivered",
      40_000,
      200,
    );
    expect(job.recipients[0]!.number).toBe("+15551234568");
    await waitUntil(() => readdirSync(path.join(folder, "done")).length > 0, "the original to move to done/");
  });

  it("answers /healthz, /readyz and /metrics", async () => {
    const health = await request(`http://127.0.0.1:${run.adminPort}/healthz`);
    expect(health.statusCode).toBe(200);
    const report = (await health.body.json()) as { status: string; checks: Record<string, { ok: boolean }> };
    expect(report.status).toBe("ok");
    expect(report.checks.store!.ok).toBe(true);
    const ready = await request(`http://127.0.0.1:${run.adminPort}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(((await ready.body.json()) as { checks: Record<string, { ok: boolean }> }).checks.api!.ok).toBe(true);
    const text = await (await request(`http://127.0.0.1:${run.adminPort}/metrics`)).body.text();
    const m = parsePrometheus(text);
    expect(m.get('faxgate_jobs{state="delivered"}')).toBeGreaterThanOrEqual(1);
    expect(m.get('faxgate_smtp_replies_total{code="250"}')).toBeGreaterThanOrEqual(1);
    expect([...m.keys()].some((k) => k.startsWith("faxgate_api_request_seconds_bucket"))).toBe(true);
  });

  it("the CLI sees the same queue: jobs --json and status", async () => {
    const r = await runCli(["jobs", "--json"], { cwd });
    expect(r.code).toBe(0);
    const jobs = JSON.parse(r.stdout) as Array<{
      id: string;
      source: string;
      user: string;
      state: string;
      createdAt: string;
      recipients: Array<{
        number: string;
        state: string;
        messageId: string | null;
        resultCode: string | null;
        resultInfo: string | null;
      }>;
    }>;
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    for (const j of jobs) {
      expect(j).toHaveProperty("createdAt");
      expect(["smtp", "spool", "cli"]).toContain(j.source);
      expect(j.user).toBe("demo");
      for (const rc of j.recipients) expect(rc).toHaveProperty("resultCode");
    }
    const s = await runCli(["status", "--json"], { cwd });
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout).api.ok).toBe(true);
  });

  it("faxgate send --wait shows progress and exits 0 once delivered; job, history, contacts and download work", async () => {
    const file = path.join(cwd, "letter.pdf");
    writeFileSync(file, await makePdf("Sent from the command line"));
    const sent = await runCli(
      ["send", "--to", "+1 (555) 123-4570", "--subject", "CLI fax", "--cover", file, "--wait"],
      { cwd, timeoutMs: 60_000 },
    );
    expect(sent.code, sent.stderr).toBe(0);
    const id = /queued as (\S+)/.exec(sent.stdout)![1]!;
    expect(sent.stderr).toMatch(new RegExp(`${id} delivered: \\+1 555-123-4570 delivered`));

    const shown = await runCli(["job", id], { cwd });
    expect(shown.stdout).toMatch(/state\s+delivered/);
    expect(shown.stdout).toMatch(/cover\s+yes, subject "CLI fax"/);
    const messageId = /message (\S+)/.exec(shown.stdout)![1]!;

    const hist = await runCli(["history", "--json"], { cwd });
    expect(hist.code).toBe(0);
    expect((JSON.parse(hist.stdout) as { rows: Array<{ messageId: string }> }).rows.map((r) => r.messageId)).toContain(
      messageId,
    );

    const contacts = await runCli(["contacts", "list"], { cwd });
    expect(contacts.stdout).toContain("Acme Billing");
    // Changing contacts goes through the admin key: the user's print_driver key would get 403.
    const added = await runCli(["contacts", "add", "--name", "Zeta Labs", "--fax", "+1 555 010 0199"], { cwd });
    expect(added.code, added.stderr).toBe(0);
    const contactId = /created contact (\S+)/.exec(added.stdout)![1]!;
    const renamed = await runCli(["contacts", "update", contactId, "--name", "Zeta Labs Inc"], { cwd });
    expect(renamed.code, renamed.stderr).toBe(0);
    expect((await runCli(["contacts", "list", "-q", "Zeta"], { cwd })).stdout).toContain("Zeta Labs Inc");
    const removed = await runCli(["contacts", "delete", contactId], { cwd });
    expect(removed.code, removed.stderr).toBe(0);
    expect((await runCli(["contacts", "list", "-q", "Zeta"], { cwd })).stdout).not.toContain("Zeta Labs");

    // download takes the job id as well as the message id
    const byJob = await runCli(["download", id], { cwd });
    expect(byJob.code, byJob.stderr).toBe(0);
    expect(
      readFileSync(path.join(cwd, `${id}.pdf`))
        .subarray(0, 5)
        .toString(),
    ).toBe("%PDF-");

    const out = path.join(cwd, "fax.pdf");
    const dl = await runCli(["download", messageId, "-o", out], { cwd });
    expect(dl.code, dl.stderr).toBe(0);
    expect(readFileSync(out).subarray(0, 5).toString()).toBe("%PDF-");

    const bad = await runCli(["send", "--to", "not-a-number", file], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("contains characters other than digits");
  }, 120_000);

  it("stops cleanly on SIGTERM and never logs a key", async () => {
    const code = await stop(run);
    expect(code).toBe(0);
    expect(run.out.text).toContain("STOPPED");
    const sb = JSON.parse(readFileSync(path.join(cwd, "data", "sandbox.json"), "utf8")) as { adminKey: string };
    const all = run.out.text + run.err.text;
    expect(all).not.toContain("sandbox-demo-key");
    expect(all).not.toContain(sb.adminKey);
  });
});

describe("SIGTERM while a send is in flight", () => {
  it("finishes the send, exits 0, and the fax is neither lost nor sent twice after a restart", async () => {
    const cwd = tempFolder("sigterm");
    let run: Running | null = null;
    try {
      run = await startSandbox(cwd);
      const sb = JSON.parse(readFileSync(path.join(cwd, "data", "sandbox.json"), "utf8")) as {
        baseUrl: string;
        caFile: string;
        adminKey: string;
      };
      const agent = new Agent({ connect: { ca: readFileSync(sb.caFile) } });
      const admin = { authorization: `Basic ${sb.adminKey}`, "content-type": "application/json" };
      await request(`${sb.baseUrl}/_emulator/faults`, {
        method: "PUT",
        dispatcher: agent,
        headers: admin,
        body: JSON.stringify({ latencyMs: 2500 }),
      });
      const info = await mailer(run.smtpPort).sendMail({
        from: "demo@localhost",
        to: "15551234569@fax.localhost",
        subject: "slow one",
        attachments: [{ filename: "a.pdf", content: await makePdf("slow") }],
      });
      expect(info.response).toMatch(/^250 /);
      await waitUntil(
        async () => (await jobsIn(cwd)).some((j) => j.recipients.some((r) => r.state === "sending")),
        "a send in flight",
        20_000,
        50,
      );
      expect(await stop(run)).toBe(0);
      const after = (await jobsIn(cwd))[0]!;
      expect(after.recipients[0]!.state).not.toBe("sending");
      await request(`${sb.baseUrl}/_emulator/faults`, {
        method: "PUT",
        dispatcher: agent,
        headers: admin,
        body: JSON.stringify({ latencyMs: 0 }),
      }).catch(() => {});
      await agent.close();

      run = await startSandbox(cwd);
      const sb2 = JSON.parse(readFileSync(path.join(cwd, "data", "sandbox.json"), "utf8")) as {
        baseUrl: string;
        caFile: string;
        adminKey: string;
      };
      const agent2 = new Agent({ connect: { ca: readFileSync(sb2.caFile) } });
      await request(`${sb2.baseUrl}/_emulator/faults`, {
        method: "PUT",
        dispatcher: agent2,
        headers: { authorization: `Basic ${sb2.adminKey}`, "content-type": "application/json" },
        body: JSON.stringify({ latencyMs: 0 }),
      });
      // This timed out three times in full-suite runs on 26 Nov 2026: the SIGTERM came between
      // the send's claim and its first call, stop() marked it unknown, and after the restart it
      // was parked as "cannot tell whether it went out" (it had not). stop() now waits for
      // claimed sends (test/dispatch/dispatcher.test.ts, "stop() while a claimed send ...").
      const done = await waitUntil(
        async () => (await jobsIn(cwd)).find((j) => j.state === "delivered"),
        "the job to be delivered after the restart",
        60_000,
        200,
      );
      const faxes = (await (
        await request(`${sb2.baseUrl}/_emulator/faxes`, {
          dispatcher: agent2,
          headers: { authorization: `Basic ${sb2.adminKey}` },
        })
      ).body.json()) as unknown;
      const list = (
        Array.isArray(faxes)
          ? faxes
          : ((faxes as { faxes?: unknown[]; rows?: unknown[] }).faxes ?? (faxes as { rows?: unknown[] }).rows ?? [])
      ) as Array<{ cf?: Record<string, string> }>;
      expect(list.filter((f) => f.cf?.faxgateJob === done.id)).toHaveLength(1);
      await agent2.close();
    } finally {
      if (run) await stop(run, "SIGKILL");
      rmSync(cwd, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    }
  }, 120_000);
});
