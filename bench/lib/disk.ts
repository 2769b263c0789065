// Requests the disk completed, from /proc/diskstats (Linux): the block device that holds a folder.
// The counters are the device's, so whatever else writes to it meanwhile is counted too.
import { readFileSync, statSync } from "node:fs";

export interface DiskCounts {
  /** write requests completed */
  writes: number;
  /** cache flush requests completed (what each fsync ends with on a disk with a write cache) */
  flushes: number;
}

/**
 * A reader of the counters of the device holding `dir`, or why there is none (not Linux, a folder
 * on tmpfs or another file system without a block device, a kernel before 5.5 without flush counts).
 */
export function diskCounter(dir: string): { read: () => DiskCounts } | { unavailable: string } {
  let text: string;
  try {
    text = readFileSync("/proc/diskstats", "utf8");
  } catch {
    return { unavailable: "no /proc/diskstats (not Linux)" };
  }
  const dev = statSync(dir).dev;
  // Linux's dev_t: the major number in bits 8-19 (and 32 up), the minor in bits 0-7 and 20-31
  const major = Math.floor(dev / 256) & 0xfff;
  const minor = (dev & 0xff) | (Math.floor(dev / 2 ** 20) & 0xfff00);
  const find = (all: string): number[] | null => {
    for (const line of all.split("\n")) {
      const f = line.trim().split(/\s+/);
      if (Number(f[0]) === major && Number(f[1]) === minor) return f.slice(3).map(Number);
    }
    return null;
  };
  const first = find(text);
  if (!first)
    return { unavailable: `${dir} is on no block device in /proc/diskstats (device ${major}:${minor}, tmpfs?)` };
  if (first.length < 16)
    return { unavailable: "this kernel does not count flush requests in /proc/diskstats (5.5 and later do)" };
  return {
    read: () => {
      const f = find(readFileSync("/proc/diskstats", "utf8")) ?? first;
      return { writes: f[4]!, flushes: f[15]! };
    },
  };
}
