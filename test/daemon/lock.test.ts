// One daemon per data folder: a second one is refused with a clear message and no side effects,
// a SIGKILLed one leaves no stale lock, and the work its leases held is taken back at once.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { DaemonLock } from "../../src/store/daemon-lock.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { runCli } from "../helpers/cli.js";
import { waitUntil } from "../helpers/wait.js";
import { disposeRig, freePort, kill, makeRig, startDaemon, type Daemon, type Rig } from "../faults/harness.js";

let rig: Rig;
beforeAll(async () => {
  rig = await makeRig({ delayMs: 0 });
});
afterAll(() => disposeRig(rig));

describe("DaemonLock", () => {
  it("is held once per data folder, and again after release", () => {
    mkdirSync(rig.dataDir, { recursive: true });
    const first = DaemonLock.acquire(rig.dataDir);
    try {
      writeFileSync(path.join(rig.dataDir, "faxgate.pid"), "4242\n");
      let err: unknown;
      try {
        DaemonLock.acquire(rig.dataDir).release();
      } catch (e) {
        err = e;
      }
      expect(isFaxgateError(err, "ALREADY_RUNNING")).toBe(true);
      expect((err as Error).message).toMatch(/another faxgate daemon \(pid 4242\) is already using the data folder/);
    } finally {
      first.release();
      rmSync(path.join(rig.dataDir, "faxgate.pid"), { force: true });
    }
    DaemonLock.acquire(rig.dataDir).release();
  });
});

describe("a second daemon on the same data folder", () => {
  let daemon: Daemon | null = null;
  afterAll(async () => {
    if (daemon) await kill(daemon, "SIGTERM");
  });

  it("is refused (exit 1, naming the running pid) and changes nothing; a SIGKILLed daemon leaves no lock behind", async () => {
    daemon = await startDaemon(rig);
    await waitUntil(() => existsSync(path.join(rig.dataDir, "faxgate.pid")), "the pid file");
    const other = await runCli(
      ["start", "--config", rig.configFile, "--smtp-listen", `127.0.0.1:${await freePort()}`],
      { cwd: rig.dir, timeoutMs: 60_000 },
    );
    expect(other.code).toBe(1);
    expect(other.stderr + other.stdout).toContain(
      `another faxgate daemon (pid ${daemon.child.pid}) is already using the data folder`,
    );
    expect(readFileSync(path.join(rig.dataDir, "faxgate.pid"), "utf8").trim()).toBe(String(daemon.child.pid));
    expect(daemon.child.exitCode).toBeNull();

    await kill(daemon, "SIGKILL");
    daemon = await startDaemon(rig);
    expect(daemon.child.exitCode).toBeNull();
    await kill(daemon, "SIGTERM");
    daemon = null;
  });

  it("takes back at start what a dead run held under a lease, instead of waiting for the lease to run out", async () => {
    const store = SqliteStore.open({ dataDir: rig.dataDir });
    const bad = path.join(rig.dir, "bad.bin");
    writeFileSync(bad, "not a document");
    let jobId: string;
    try {
      const job = await store.enqueueCorrupt({
        source: "spool",
        user: "alice",
        reason: "a test refusal",
        original: { path: bad, name: "bad.bin", contentType: "application/octet-stream" },
      });
      jobId = job.id;
      // a run that died mid-send holds this notification for an hour
      expect((await store.claimNotifications("dead-run:1:aaaaaa", 10, 3_600_000)).map((n) => n.jobId)).toContain(jobId);
    } finally {
      store.close();
    }
    daemon = await startDaemon(rig);
    const outbox = path.join(rig.dir, "outbox");
    const mailFor = () =>
      existsSync(outbox)
        ? readdirSync(outbox)
            .filter((f) => f.endsWith(".eml"))
            .find((f) => readFileSync(path.join(outbox, f), "utf8").includes(jobId))
        : undefined;
    await waitUntil(() => mailFor() !== undefined, "the rejected-file mail the dead run held", 30_000);
    expect(daemon.out.text).toContain("took back the work of an earlier run");
  });
});
