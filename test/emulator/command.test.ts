// `faxgate emulator` as a process: one JSON line on stdout, logs on stderr, clean stop on SIGTERM.
// Also the curl walk-through from the docs (skipped when curl is missing).
import { execFile, spawn, spawnSync } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PDFDocument } from "@cantoo/pdf-lib";
import { tempFolder } from "../tmp-dir.js";

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const hasCurl = spawnSync("curl", ["--version"]).status === 0;

interface Listening {
  event: string;
  baseUrl: string;
  caFile: string;
  adminKey: string;
  keys: Array<{ email: string; access: string; token: string }>;
}

let dir: string;
let child: ReturnType<typeof spawn>;
let info: Listening;
const stdoutLines: string[] = [];
let stderr = "";
let exited: Promise<number | null>;

beforeAll(async () => {
  dir = tempFolder("test");
  await writeFile(
    path.join(dir, "seed.json"),
    JSON.stringify({
      account: { accountName: "Curl Co", timezone: "UTC" },
      users: [
        {
          email: "dana@example.com",
          firstName: "Dana",
          userRole: "admin",
          keys: [
            { name: "a", access: "admin", token: "dana-admin" },
            { name: "p", access: "print_driver", token: "dana-print" },
          ],
        },
      ],
    }),
  );
  child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(here, "fixtures/emulator-cli.ts"),
      "emulator",
      "--listen",
      "127.0.0.1:0",
      "--data",
      path.join(dir, "data"),
      "--seed",
      path.join(dir, "seed.json"),
      "--variant",
      "b",
      "--delay-ms",
      "50",
      "--cf-mode",
      "dropped",
      "--history-per-minute",
      "3",
      "--history-retry-after",
      "--rate-per-second",
      "7",
      "--webhook-retry-scale",
      "0.5",
      "--info-users",
      "viewers",
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout! });
  info = await new Promise<Listening>((resolve, reject) => {
    lines.on("line", (l) => {
      stdoutLines.push(l);
      if (stdoutLines.length === 1) resolve(JSON.parse(l) as Listening);
    });
    child.on("exit", (code) => reject(new Error(`emulator exited ${code}: ${stderr.slice(0, 500)}`)));
  });
}, 30_000);

afterAll(async () => {
  if (child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await gone;
  }
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("faxgate emulator", () => {
  it("prints one listening line with the address, CA file and keys", () => {
    expect(info).toMatchObject({ event: "listening", adminKey: "dana-admin" });
    expect(info.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(info.caFile).toBe(path.join(dir, "data", "ca.pem"));
    expect(info.keys).toEqual([
      { email: "dana@example.com", access: "admin", token: "dana-admin" },
      { email: "dana@example.com", access: "print_driver", token: "dana-print" },
    ]);
  });

  it("takes the behaviour switches as flags, and refuses a bad one by its flag name", async () => {
    const curl = async (...args: string[]) =>
      (await run("curl", ["-sS", "--cacert", info.caFile, "-H", "Authorization: Basic dana-admin", ...args])).stdout;
    if (hasCurl) {
      expect(JSON.parse(await curl(`${info.baseUrl}/_emulator/behaviour`))).toEqual({
        offsetMode: "pages",
        cfMode: "dropped",
        recipientErrorShape: "input",
        historyPerMinute: 3,
        historyRetryAfter: true,
        ratePerSecond: 7,
        webhookRetryScale: 0.5,
        infoUsers: "viewers",
      });
    }
    const bad = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        path.join(here, "fixtures/emulator-cli.ts"),
        "emulator",
        "--data",
        path.join(dir, "bad"),
        "--offset-mode",
        "lines",
      ],
      { cwd: root },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (err: { code: number; stderr: string }) => err,
    );
    // (this bare program has no exit-code mapping; the real CLI exits 2 for USAGE)
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--offset-mode");
    expect(bad.stderr).toContain("pages, records");
  });

  it.skipIf(!hasCurl)("works with curl --cacert: me, multipart send, history, download", async () => {
    const curl = async (...args: string[]) =>
      (
        await run(
          "curl",
          ["-sS", "--fail-with-body", "--cacert", info.caFile, "-H", "Authorization: Basic dana-print", ...args],
          { encoding: "buffer", maxBuffer: 10 * 1024 * 1024 },
        )
      ).stdout;
    const me = JSON.parse((await curl(`${info.baseUrl}/v1/me`)).toString());
    expect(me.email).toBe("dana@example.com");

    const doc = await PDFDocument.create();
    doc.addPage();
    doc.addPage();
    const pdfFile = path.join(dir, "two.pdf");
    await writeFile(pdfFile, await doc.save());
    const sent = JSON.parse(
      (
        await curl(
          "-F",
          "faxNumber=+15550108080",
          "-F",
          "coverPage=true",
          "-F",
          "subject=From curl",
          "-F",
          `attachments=@${pdfFile};type=application/pdf`,
          `${info.baseUrl}/v1/faxes`,
        )
      ).toString(),
    );
    expect(sent).toMatchObject({ faxNumber: "+15550108080", status: "processing", pagesCount: 3 });

    const hist = JSON.parse((await curl(`${info.baseUrl}/v1/fax/history?limit=5&offset=0`)).toString());
    expect(hist).toMatchObject({ count: "1", query: { limit: 5, offset: 0 } });
    expect(hist.rows[0].messageId).toBe(sent.messageId);

    const out = path.join(dir, "out.pdf");
    await curl("-o", out, `${info.baseUrl}/v1/fax/${sent.messageId}/download`);
    expect((await PDFDocument.load(await readFile(out))).getPageCount()).toBe(3);

    // HTTPS only: plain HTTP on the same port fails
    await expect(
      run("curl", ["-sS", "--max-time", "5", `${info.baseUrl.replace("https:", "http:")}/ping`]),
    ).rejects.toThrow();
  });

  it("stops cleanly on SIGTERM, and stdout holds only the listening line", async () => {
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stdoutLines).toHaveLength(1);
    expect(stderr).not.toContain("dana-print");
  });
});
