// Which way a spool folder's file calls are made: on the main thread only where the kernel says
// the folder is on a local disk; through the thread pool anywhere else, so that a network file
// system that stops answering never holds the event loop.
import { statfsSync } from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { callsFor, hereCalls, isLocalFileSystem, poolCalls } from '../../src/spool/folder-calls.js';

describe('the file calls a spool folder gets', () => {
  it('local disks (statfs magic numbers) are local; network, FUSE and unknown ones are not', () => {
    expect(isLocalFileSystem(0xef53)).toBe(process.platform === 'linux'); // ext4
    expect(isLocalFileSystem(0x01021994)).toBe(process.platform === 'linux'); // tmpfs
    // btrfs, as a 32-bit kernel's signed f_type gives it
    expect(isLocalFileSystem(0x9123683e | 0)).toBe(process.platform === 'linux');
    for (const remote of [0x6969 /* nfs */, 0xff534d42 /* cifs */, 0xfe534d42 /* smb2 */, 0x65735546 /* fuse */, 0x01021997 /* 9p */, 0x00c36400 /* ceph */, 0]) {
      expect(isLocalFileSystem(remote)).toBe(false);
    }
  });

  it.runIf(process.platform === 'linux')('/proc is no disk: its calls go through the pool', async () => {
    expect(await callsFor('/proc/self')).toBe(poolCalls);
  });

  it('a folder that is not there gets the pool', async () => {
    expect(await callsFor('/nonexistent/faxgate-spool')).toBe(poolCalls);
  });

  const tmpType = process.platform === 'linux' ? statfsSync(os.tmpdir()).type >>> 0 : 0;
  const knownDisk = [0xef53, 0x01021994, 0x58465342, 0x9123683e, 0x794c7630].includes(tmpType);
  it.runIf(knownDisk)(`the temp folder, on a local disk here (statfs type 0x${tmpType.toString(16)}), gets the calls on this thread`, async () => {
    expect(await callsFor(os.tmpdir())).toBe(hereCalls);
  });
});
