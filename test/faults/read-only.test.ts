// Disk trouble: the data folder becomes read-only under a running daemon. SMTP must answer 4xx
// for every message (never 250 for one it could not store), a spool file dropped meanwhile is not
// lost, the daemon stays up, and once the folder is writable again mail gets 250 and everything
// is faxed exactly once.
//
// How "read-only" is made: the kernel refuses `mount -o remount,ro` of a file system that has
// files open for writing (EBUSY), and the daemon always has its SQLite files open. So a second
// mount of the same tmpfs, made read-only first, is stacked on the data folder: every new file,
// folder or rename in the data folder fails with EROFS (documents, incoming mail, temp files),
// while the database files the daemon opened before stay writable through their descriptors.
// Needs root; skips with a message otherwise.
import { execFileSync, spawnSync } from "node:child_process";
import {
  accessSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../helpers/wait.js";
import {
  allJobsFinal,
  bugLines,
  emulatorFaxes,
  kill,
  makeRig,
  numberFor,
  SHORT,
  startDaemon,
  tally,
  type Daemon,
  type Rig,
} from "./harness.js";

function run(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const probe = path.join("/tmp", `faxgate-ro-probe-${process.pid}`);
mkdirSync(probe, { recursive: true });
const canMount = run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]);
if (canMount) run("umount", [probe]);
rmSync(probe, { recursive: true, force: true });
if (!canMount) console.warn("read-only test SKIPPED: cannot mount a tmpfs here (needs root)");

// Stacks a read-only view of dir's file system on dir. The view is made read-only on a staging
// path nothing uses, then stacked: a bind mount stacked first and then remounted read-only fails
// with EBUSY whenever the daemon creates, opens or removes a file through it in between (the
// kernel refuses the switch while a mount has writers); a CI run hit that once.
function stackReadOnly(dir: string, staging: string): boolean {
  mkdirSync(staging, { recursive: true });
  if (!run("mount", ["--bind", dir, staging])) return false;
  const ok = run("mount", ["-o", "remount,bind,ro", staging]) && run("mount", ["--bind", staging, dir]);
  run("umount", [staging]);
  return ok;
}

function writable(dir: string): boolean {
  const p = path.join(dir, `.probe-${process.pid}`);
  try {
    writeFileSync(p, "x");
    rmSync(p);
    return true;
  } catch {
    return false;
  }
}

async function pdf(text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc
    .addPage([612, 792])
    .drawText(text, { x: 72, y: 700, size: 12, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

describe.skipIf(!canMount)("data folder read-only", () => {
  let rig: Rig;
  let daemon: Daemon | null = null;
  let stacked = false;
  afterAll(async () => {
    if (daemon) await kill(daemon, "SIGKILL");
    if (rig) {
      if (stacked) run("umount", ["-l", rig.dataDir]);
      run("umount", ["-l", rig.dataDir]);
      await rig.agent.close();
      await rig.emu.stop();
      rmSync(rig.dir, { recursive: true, force: true });
    }
  });

  it("answers 4xx while read-only, never 250, keeps a spool drop, and faxes everything once writable again", async () => {
    rig = await makeRig({ delayMs: 100 });
    mkdirSync(rig.dataDir, { recursive: true });
    expect(run("mount", ["-t", "tmpfs", "-o", "size=32m", "tmpfs", rig.dataDir])).toBe(true);
    daemon = await startDaemon(rig);
    const attachment = await pdf("read-only test");
    const send = (i: number) =>
      nodemailer
        .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
        .sendMail({
          from: "alice@example.com",
          to: `${numberFor(i).slice(1)}@fax.example.com`,
          subject: `read-only ${i}`,
          // the same Message-ID on every try, as a relay retrying a deferred message sends it
          messageId: `<ro-${i}@faults.test>`,
          text: "see attachment",
          attachments: [{ filename: "doc.pdf", content: attachment }],
        })
        .then(
          (info) => info.response,
          (e: Error & { response?: string }) => e.response ?? `ERR ${e.message}`,
        );

    // baseline: accepted while writable
    expect(await send(0)).toMatch(/^250 /);

    // the data folder turns read-only
    const realRo = run("mount", ["-o", "remount,ro", rig.dataDir]);
    if (!realRo) {
      expect(stackReadOnly(rig.dataDir, path.join(rig.dir, "ro-staging"))).toBe(true);
      stacked = true;
    }
    expect(writable(rig.dataDir)).toBe(false);

    const n = SHORT ? 4 : 12;
    const whileRo: string[] = [];
    for (let i = 1; i <= n; i += 1) whileRo.push(await send(i));

    // a spool file dropped while read-only: claimed, cannot be queued, must wait, not be lost
    const folder = path.join(rig.spoolRoot, "alice");
    const spoolNumber = numberFor(500);
    const tmp = path.join(rig.dir, "drop.tmp");
    writeFileSync(tmp, await pdf("spool drop while read-only"));
    renameSync(tmp, path.join(folder, `${spoolNumber.slice(1)}.pdf`));
    await daemon.out.waitFor(/DEFERRED spool file/, 30_000);
    for (let i = n + 1; i <= n + 2; i += 1) whileRo.push(await send(i));
    const aliveWhileRo = daemon.child.exitCode === null && daemon.child.signalCode === null;
    expect(writable(rig.dataDir)).toBe(false);

    // writable again
    if (stacked) expect(run("umount", ["-l", rig.dataDir])).toBe(true);
    else expect(run("mount", ["-o", "remount,rw", rig.dataDir])).toBe(true);
    stacked = false;
    expect(writable(rig.dataDir)).toBe(true);

    // the relay retries every deferred message; each gets 250 within a few tries
    const after: string[] = [];
    for (let i = 1; i <= n + 2; i += 1) {
      let r = "";
      for (let t = 0; t < 5 && !r.startsWith("250"); t += 1) {
        // fixed wait on purpose: a relay's pause between retries, as one would
        if (t > 0) await new Promise((res) => setTimeout(res, 1000));
        r = await send(i);
      }
      after.push(r);
    }

    const expected = new Set<string>([
      numberFor(0),
      spoolNumber,
      ...Array.from({ length: n + 2 }, (_, k) => numberFor(k + 1)),
    ]);
    // the spool file is tried again after the watcher's retry delay (30 s)
    await waitUntil(
      async () => tally(expected, await emulatorFaxes(rig)).lost.length === 0,
      "every mail and the spool drop faxed",
      120_000,
      500,
    );
    await waitUntil(() => allJobsFinal(rig!), "every job final: nothing left that could be faxed twice", 60_000, 250);
    const t = tally(expected, await emulatorFaxes(rig));
    const code = (r: string) => r.slice(0, 3);
    process.stdout.write(
      `read-only data folder (${realRo ? "remount,ro" : "read-only bind mount stacked on the tmpfs"}): ` +
        `while read-only replies ${whileRo.map(code).join(" ")}, daemon up ${aliveWhileRo}; after: replies ${after.map(code).join(" ")}; ` +
        `expected faxes ${t.accepted}, faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, ` +
        `spool drop ${existsSync(path.join(folder, "done", `${spoolNumber.slice(1)}.pdf`)) ? "in done/" : `NOT in done/ (${readdirSync(folder).join(" ")})`}\n`,
    );
    for (const r of whileRo) expect(r).toMatch(/^4\d\d /);
    expect(aliveWhileRo).toBe(true);
    for (const r of after) expect(r).toMatch(/^250 /);
    expect(t.lost).toEqual([]);
    expect(t.duplicated).toEqual([]);
    expect(daemon.child.exitCode).toBeNull();
  });
});

// A real read-only file system: ext4 on a loop device with errors=remount-ro, turned read-only by
// a file system error (the kernel's trigger_fs_error). Now SQLite's own writes fail too. Such a
// file system comes back only through umount, fsck and mount, which needs the daemon stopped:
// the test then checks that what got 250 before the error, the mail refused during it and the
// spool drop are all faxed exactly once after the restart. Needs root and a loop device.
function loopExt4(dir: string, image: string): string | null {
  if (!run("truncate", ["-s", "64M", image]) || !run("mkfs.ext4", ["-q", "-F", image])) return null;
  mkdirSync(dir, { recursive: true });
  if (!run("mount", ["-o", "loop,errors=remount-ro", image, dir])) return null;
  try {
    return path.basename(execFileSync("findmnt", ["-n", "-o", "SOURCE", dir], { encoding: "utf8" }).trim());
  } catch {
    return null;
  }
}

describe.skipIf(!canMount)("data folder read-only after a file system error (ext4 on a loop device)", () => {
  let rig: Rig | null = null;
  let daemon: Daemon | null = null;
  let image = "";
  afterEach(async () => {
    if (daemon) await kill(daemon, "SIGKILL");
    if (rig) {
      run("umount", ["-l", rig.dataDir]);
      await rig.agent.close();
      await rig.emu.stop();
      rmSync(rig.dir, { recursive: true, force: true });
    }
  });

  it("answers 4xx while the file system is read-only, stays up, and after fsck and a restart faxes everything once", async (ctx) => {
    // the service takes 3 s per fax: the jobs accepted before the error are still in flight
    rig = await makeRig({ delayMs: 3000 });
    image = path.join(rig.dir, "data.ext4");
    const dev = loopExt4(rig.dataDir, image);
    const trigger = dev ? `/sys/fs/ext4/${dev}/trigger_fs_error` : "";
    if (!dev || !existsSync(trigger)) {
      process.stdout.write("read-only ext4 case SKIPPED: no loop device, ext4 or trigger_fs_error here\n");
      ctx.skip();
      return;
    }
    daemon = await startDaemon(rig);
    const attachment = await pdf("ext4 error test");
    const send = (i: number) =>
      nodemailer
        .createTransport({ host: "127.0.0.1", port: rig!.smtpPort, secure: false, ignoreTLS: true })
        .sendMail({
          from: "alice@example.com",
          to: `${numberFor(200 + i).slice(1)}@fax.example.com`,
          subject: `ext4 ${i}`,
          messageId: `<ext4-${i}@faults.test>`,
          text: "see attachment",
          attachments: [{ filename: "doc.pdf", content: attachment }],
        })
        .then(
          (info) => info.response,
          (e: Error & { response?: string }) => e.response ?? `ERR ${e.message}`,
        );

    // accepted before the error; the service takes a moment (delayMs) so jobs are in flight
    const before: string[] = [];
    for (let i = 0; i < 3; i += 1) before.push(await send(i));
    expect(before.every((r) => r.startsWith("250"))).toBe(true);

    writeFileSync(trigger, "1");
    expect(writable(rig.dataDir)).toBe(false);
    const n = SHORT ? 3 : 8;
    const whileRo: string[] = [];
    for (let i = 3; i < 3 + n; i += 1) whileRo.push(await send(i));
    const folder = path.join(rig.spoolRoot, "alice");
    const spoolNumber = numberFor(700);
    const tmp = path.join(rig.dir, "drop.tmp");
    writeFileSync(tmp, await pdf("spool drop on a read-only file system"));
    renameSync(tmp, path.join(folder, `${spoolNumber.slice(1)}.pdf`));
    await daemon.out.waitFor(/DEFERRED spool file/, 30_000);
    // a few seconds of dispatcher, notifier and sweep passes against a database it cannot write
    // fixed wait on purpose: negative check: it keeps running through these passes
    await new Promise((r) => setTimeout(r, 3000));
    const alive = daemon.child.exitCode === null && daemon.child.signalCode === null;
    const errors = daemon.out.text.split("\n").filter((l) => /"level":(50|60)/.test(l));

    // the administrator's way back: stop, unmount, fsck, mount, start
    const stopped = await Promise.race([
      kill(daemon, "SIGTERM").then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 20_000)),
    ]);
    if (!stopped) await kill(daemon, "SIGKILL");
    const exit = { code: daemon.child.exitCode, signal: daemon.child.signalCode };
    expect(run("umount", [rig.dataDir])).toBe(true);
    // 0: clean, 1 or 2: errors corrected; 4 and up: left uncorrected
    const fsck = spawnSync("e2fsck", ["-fy", image], { stdio: "ignore" }).status;
    expect(fsck).not.toBeNull();
    expect(fsck!).toBeLessThan(4);
    expect(run("mount", ["-o", "loop,errors=remount-ro", image, rig.dataDir])).toBe(true);
    daemon = await startDaemon(rig);
    const after: string[] = [];
    for (let i = 3; i < 3 + n; i += 1) after.push(await send(i));

    const expected = new Set<string>([spoolNumber, ...Array.from({ length: 3 + n }, (_, k) => numberFor(200 + k))]);
    await waitUntil(
      async () => tally(expected, await emulatorFaxes(rig!)).lost.length === 0,
      "every mail and the spool drop faxed",
      120_000,
      500,
    );
    await waitUntil(() => allJobsFinal(rig!), "every job final: nothing left that could be faxed twice", 60_000, 250);
    const t = tally(expected, await emulatorFaxes(rig));
    const code = (r: string) => r.slice(0, 3);
    process.stdout.write(
      `read-only data folder (ext4 error, remount-ro): before ${before.map(code).join(" ")}, while read-only ${whileRo.map(code).join(" ")}, ` +
        `daemon up ${alive} (${errors.length} error log lines), fsck exit ${fsck}, SIGTERM ${stopped ? `exit ${exit.code ?? exit.signal}` : "HUNG (SIGKILLed after 20 s)"}; after fsck and restart ${after.map(code).join(" ")}; ` +
        `expected faxes ${t.accepted}, faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}\n`,
    );
    for (const r of whileRo) expect(r).toMatch(/^4\d\d /);
    expect(alive).toBe(true);
    expect(stopped).toBe(true);
    for (const r of after) expect(r).toMatch(/^250 /);
    expect(t.lost).toEqual([]);
    expect(t.duplicated).toEqual([]);
    // the pid file on the read-only folder could not be removed at the SIGTERM: once a rejection
    // that kept the shutdown from finishing
    expect(bugLines(rig!)).toEqual([]);
  });
});

// The store's last look before anyone acts on a commit (stillWritable, after a claim and after a
// new job's flush) must see such a file system: Linux 6.x's ext4 only marks itself emergency_ro
// after the error, the mount stays "rw" and access(W_OK) says yes; only a write or an fsync fails.
describe.skipIf(!canMount)("the store sees an ext4 stopped by an error", () => {
  it("before the error its check passes; after it, the check and the WAL flush fail with EROFS though access(W_OK) still says writable", async (ctx) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ext4-"));
    const mnt = path.join(dir, "data");
    const dev = loopExt4(mnt, path.join(dir, "data.ext4"));
    const trigger = dev ? `/sys/fs/ext4/${dev}/trigger_fs_error` : "";
    try {
      if (!dev || !existsSync(trigger)) {
        process.stdout.write("emergency_ro check SKIPPED: no loop device, ext4 or trigger_fs_error here\n");
        ctx.skip();
        return;
      }
      const { SqliteStore } = await import("../../src/store/sqlite/store.js");
      const store = SqliteStore.open({ dataDir: mnt });
      const c = (store as unknown as { c: { stillWritable(): Promise<void>; flushWal(): Promise<void> } }).c;
      const check = (): Promise<void> => c.stillWritable();
      try {
        await check();
        await c.flushWal();
        writeFileSync(trigger, "1");
        let accessSays = "writable";
        try {
          accessSync(mnt, fsConstants.W_OK);
        } catch (err) {
          accessSays = (err as NodeJS.ErrnoException).code ?? "error";
        }
        await expect(check()).rejects.toThrow(/not writable any more \(EROFS\)/);
        // A new job's flush asks access() only after its WAL fdatasync (stillWritable walJustSynced):
        // that fdatasync must be the one to see this file system, and it does.
        await expect(c.flushWal()).rejects.toMatchObject({ code: "EROFS" });
        process.stdout.write(`ext4 after an error: access(W_OK) says ${accessSays}; the store's check says EROFS\n`);
      } finally {
        await store.close().catch(() => undefined);
      }
    } finally {
      run("umount", ["-l", mnt]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
