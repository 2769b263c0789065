// Which way a spool folder's file calls are made: on the main thread only where the kernel says
// the folder is on a local disk, and only while no call there holds the thread; through the
// thread pool anywhere else, so that a network file system that stops answering never holds the
// event loop.
import { rmSync, statfsSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { callsFor, isLocalFileSystem, localCalls, poolCalls } from "../../src/fs/folder-calls.js";
import { tempFolder } from "../tmp-dir.js";

describe("the file calls a spool folder gets", () => {
  it("local disks (statfs magic numbers) are local; network, FUSE and unknown ones are not", () => {
    expect(isLocalFileSystem(0xef53)).toBe(process.platform === "linux"); // ext4
    expect(isLocalFileSystem(0x01021994)).toBe(process.platform === "linux"); // tmpfs
    // btrfs, as a 32-bit kernel's signed f_type gives it
    expect(isLocalFileSystem(0x9123683e | 0)).toBe(process.platform === "linux");
    for (const remote of [
      0x6969 /* nfs */, 0xff534d42 /* cifs */, 0xfe534d42 /* smb2 */, 0x65735546 /* fuse */, 0x01021997 /* 9p */,
      0x00c36400 /* ceph */, 0,
    ]) {
      expect(isLocalFileSystem(remote)).toBe(false);
    }
  });

  it.runIf(process.platform === "linux")("/proc is no disk: its calls go through the pool", async () => {
    expect(await callsFor("/proc/self")).toBe(poolCalls);
  });

  it("a folder that is not there gets the pool", async () => {
    expect(await callsFor("/nonexistent/faxgate-spool")).toBe(poolCalls);
  });

  const tmpType = process.platform === "linux" ? statfsSync(os.tmpdir()).type >>> 0 : 0;
  const knownDisk = [0xef53, 0x01021994, 0x58465342, 0x9123683e, 0x794c7630].includes(tmpType);
  it.runIf(knownDisk)(
    `the temp folder, on a local disk here (statfs type 0x${tmpType.toString(16)}), gets the calls on this thread`,
    async () => {
      const calls = await callsFor(os.tmpdir());
      expect(calls).not.toBe(poolCalls);
      expect(calls.here).toBe(true);
    },
  );

  it("a call that holds the thread too long sends the folder to the pool for a while, then it comes back", async () => {
    const dir = tempFolder("calls");
    try {
      writeFileSync(path.join(dir, "a"), "x");
      // each reading of the clock is 4 ms after the last: every call "takes" 4 ms
      let t = 0;
      const slow: Array<[string, number]> = [];
      const calls = localCalls({
        slowMs: 3,
        poolForMs: 1000,
        now: () => (t += 4),
        onSlow: (call, ms) => slow.push([call, ms]),
      });
      expect(calls.here).toBe(true);
      expect((await calls.look(path.join(dir, "a")))?.size).toBe(1);
      expect(slow).toEqual([["lstat", 4]]);
      expect(calls.here).toBe(false);
      // through the pool meanwhile: the same answers, and no more timings
      await calls.rename(path.join(dir, "a"), path.join(dir, "b"));
      expect(await calls.look(path.join(dir, "a"))).toBeNull();
      expect((await calls.look(path.join(dir, "b")))?.size).toBe(1);
      expect(slow).toHaveLength(1);
      t += 1000;
      expect(calls.here).toBe(true);
      // fast calls keep it here
      const quick = localCalls({ slowMs: 3, now: () => (t += 1) });
      await quick.link(path.join(dir, "b"), path.join(dir, "c"));
      await quick.unlink(path.join(dir, "b"));
      expect(quick.here).toBe(true);
      expect((await quick.look(path.join(dir, "c")))?.nlink).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a failing call on the thread is a rejected promise with its errno code, as through the pool", async () => {
    for (const calls of [localCalls(), poolCalls]) {
      await expect(calls.rename("/nonexistent/faxgate-a", "/nonexistent/faxgate-b")).rejects.toMatchObject({
        code: "ENOENT",
      });
      await expect(calls.open("/nonexistent/faxgate-a", 0)).rejects.toMatchObject({ code: "ENOENT" });
    }
  });
});
