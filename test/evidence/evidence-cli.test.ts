// `faxgate evidence` as an operator runs it: a fax really sent (the dispatcher against the emulator
// over HTTPS, the real SQLite store), the real CLI in a child process making the bundle with the
// service's rendered fax, then `faxgate evidence verify` on it as made, after one byte of a member
// changes, after a member is removed or added, and against another gateway's key. A local
// `openssl ts` authority time-stamps it; one that is down stops the bundle unless asked not to.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { unzipSync, zipSync, type Zippable } from "fflate";
import { afterEach, describe, expect, it } from "vitest";
import { SqlLedger } from "../../src/ledger/ledger.js";
import { runCli } from "../helpers/cli.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { Rig } from "../notify/rig.js";
import { closedPort, startLocalTsa, type LocalTsa } from "./local-tsa.js";

let rig: Rig | null = null;
let tsa: LocalTsa | null = null;
afterEach(async () => {
  await rig?.stop();
  await tsa?.stop();
  rig = null;
  tsa = null;
});

async function configFor(r: Rig, name: string, extra = ""): Promise<string> {
  const file = path.join(r.dir, `${name}.yaml`);
  await writeFile(
    file,
    [
      "api:",
      `  baseUrl: ${r.emu.baseUrl}`,
      `  caFile: ${r.emu.caFile}`,
      `data: ${path.join(r.dir, "data")}`,
      "users:",
      "  - name: alice",
      "    email: alice@example.com",
      `    apiKey: ${TEST_KEYS.alice}`,
      extra,
    ].join("\n"),
  );
  return file;
}

async function rezip(src: string, dest: string, change: (m: Record<string, Uint8Array>) => void): Promise<string> {
  const m = unzipSync(await readFile(src));
  change(m);
  await writeFile(dest, zipSync(m as Zippable));
  return dest;
}

describe("faxgate evidence (the CLI)", () => {
  it("a real sent fax's bundle verifies, and fails changed, cut, padded or under another key", async () => {
    rig = await new Rig().start();
    const job = await rig.finalJob("alice", ["+15551234567"]);
    expect(job.state).toBe("delivered");
    const cfg = await configFor(rig, "faxgate");
    const zip = path.join(rig.dir, "evidence.zip");
    const made = await runCli(["evidence", job.id, "--out", zip, "--config", cfg]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toMatch(
      /evidence of job \S+ written to .*manifest sha256 [0-9a-f]{64}, signed by key [0-9a-f]{64}/,
    );
    expect(made.stderr + made.stdout).not.toContain("5551234567");
    const members = unzipSync(await readFile(zip));
    // the bundle is a row of the real ledger on this queue, by the operator at the command line
    const rows = await new SqlLedger(rig.store.sql, null).rows({ object: { kind: "job", id: job.id } });
    expect(rows.filter((r) => r.action === "evidence-made").map((r) => [r.actor.kind, r.door])).toEqual([
      ["operator", "cli"],
    ]);
    expect(new TextDecoder().decode(members["recipients/1/fax-as-rendered.pdf"]!.slice(0, 5))).toBe("%PDF-");

    const ok = await runCli(["evidence", "verify", zip]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^ok {6}signature: Ed25519/m);
    expect(ok.stdout).toContain("the bundle holds");

    // pinned to this gateway's key (PEM file, or its fingerprint)
    const key = await runCli(["evidence", "key", "--config", cfg]);
    expect(key.code, key.stderr).toBe(0);
    const pem = path.join(rig.dir, "gateway.pem");
    await writeFile(pem, key.stdout.split("fingerprint")[0]!);
    expect((await runCli(["evidence", "verify", zip, "--key", pem])).code).toBe(0);
    const fingerprint = /fingerprint \(sha256\): ([0-9a-f]{64})/.exec(key.stdout)![1]!;
    expect((await runCli(["evidence", "verify", zip, "--key", fingerprint])).code).toBe(0);

    // every member is bent in turn in bundle.test.ts; here one of each kind, through the real CLI
    for (const name of ["documents/1-letter.pdf", "recipients/1/fax-as-rendered.pdf", "manifest.json"]) {
      const bent = await rezip(zip, path.join(rig.dir, "bent.zip"), (m) => {
        const b = new Uint8Array(m[name]!);
        b[b.length >> 1] ^= 0x01;
        m[name] = b;
      });
      const v = await runCli(["evidence", "verify", bent]);
      expect(v.code, name).toBe(1);
      expect(v.stdout).toContain("the bundle does NOT hold");
      if (!name.startsWith("manifest.")) expect(v.stdout).toContain(`FAILED  ${name}: changed`);
    }
    const cut = await rezip(zip, path.join(rig.dir, "cut.zip"), (m) => delete m["transmission-report.pdf"]);
    const vc = await runCli(["evidence", "verify", cut]);
    expect(vc.code).toBe(1);
    expect(vc.stdout).toContain("FAILED  transmission-report.pdf: listed in the manifest but missing");
    const padded = await rezip(zip, path.join(rig.dir, "padded.zip"), (m) => (m["notes.txt"] = new Uint8Array([1])));
    const vp = await runCli(["evidence", "verify", padded]);
    expect(vp.code).toBe(1);
    expect(vp.stdout).toContain("FAILED  notes.txt: not listed in the manifest (added)");

    // another gateway (its own data folder, so its own key)
    const other = path.join(rig.dir, "other.yaml");
    await writeFile(other, `api:\n  baseUrl: sandbox\ndata: ${path.join(rig.dir, "other-data")}\n`);
    const otherKey = await runCli(["evidence", "key", "--config", other]);
    expect(otherKey.code, otherKey.stderr).toBe(0);
    const otherPem = path.join(rig.dir, "other.pem");
    await writeFile(otherPem, otherKey.stdout.split("fingerprint")[0]!);
    const foreign = await runCli(["evidence", "verify", zip, "--key", otherPem]);
    expect(foreign.code).toBe(1);
    expect(foreign.stdout).toMatch(/FAILED {2}signer: signed by key [0-9a-f]{64}, not the expected/);

    // usage: no --out; an unknown job
    expect((await runCli(["evidence", job.id, "--config", cfg])).code).toBe(2);
    const missing = await runCli(["evidence", "nosuchjob", "--out", zip, "--config", cfg]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no job nosuchjob");
  }, 300_000);

  it("time-stamps with evidence.tsa; a TSA that is down fails by name unless --without-timestamp", async () => {
    rig = await new Rig().start();
    tsa = await startLocalTsa();
    const job = await rig.finalJob("alice", ["+15551234567"]);
    const cfg = await configFor(rig, "tsa", `evidence:\n  tsa:\n    url: ${tsa.url}\n    timeout: 10s\n`);
    const zip = path.join(rig.dir, "stamped.zip");
    const made = await runCli(["evidence", job.id, "--out", zip, "--config", cfg]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toContain("time-stamped");
    const v = await runCli(["evidence", "verify", zip, "--tsa-ca", tsa.caFile]);
    expect(v.code, v.stdout).toBe(0);
    expect(v.stdout).toMatch(/^ok {6}manifest\.tst: time-stamped \d{4}-\d\d-\d\dT.* by CN=Test TSA/m);

    const port = await closedPort();
    const down = await configFor(
      rig,
      "down",
      `evidence:\n  tsa:\n    url: http://127.0.0.1:${port}/tsr\n    timeout: 5s\n`,
    );
    const out = path.join(rig.dir, "unstamped.zip");
    const refused = await runCli(["evidence", job.id, "--out", out, "--config", down]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the time-stamp authority http://127.0.0.1:${port}/tsr could not be reached`);
    await expect(readFile(out)).rejects.toThrow(/ENOENT/);
    const asked = await runCli(["evidence", job.id, "--out", out, "--without-timestamp", "--config", down]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toContain("WITHOUT a time-stamp");
    expect((await runCli(["evidence", "verify", out])).code).toBe(0);
  }, 300_000);
});
