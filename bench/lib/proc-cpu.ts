// CPU time of a whole server from /proc: a process and every descendant alive now (utime +
// stime, which cover all of a process's threads), plus what its exited children left in the
// parent's cutime + cstime. The difference of two readings is what the server spent between them,
// whatever processes it started or reaped meanwhile (Postfix's smtpd and cleanup come and go;
// faxgate's PDF readers and LibreOffice too).
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

interface Stat {
  pid: number;
  ppid: number;
  comm: string;
  ticks: number;
  childTicks: number;
}

function stat(file: string): Stat | null {
  try {
    const s = readFileSync(file, "utf8");
    const close = s.lastIndexOf(")");
    const f = s.slice(close + 2).split(" ");
    // fields from the 3rd on: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    return {
      pid: Number(s.slice(0, s.indexOf(" "))),
      ppid: Number(f[1]),
      comm: s.slice(s.indexOf("(") + 1, close),
      ticks: Number(f[11]) + Number(f[12]),
      childTicks: Number(f[13]) + Number(f[14]),
    };
  } catch {
    return null;
  }
}

/** CPU ms so far of `root` and its descendants (see above). */
export function treeCpuMs(root: number): number {
  const all = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => stat(`/proc/${d}/stat`))
    .filter((s): s is Stat => s !== null);
  const kids = new Map<number, Stat[]>();
  for (const s of all) kids.set(s.ppid, [...(kids.get(s.ppid) ?? []), s]);
  const top = all.find((s) => s.pid === root);
  if (!top) return NaN;
  let ticks = 0;
  const walk = (s: Stat): void => {
    ticks += s.ticks + s.childTicks;
    for (const k of kids.get(s.pid) ?? []) walk(k);
  };
  walk(top);
  return ticks * TICK_MS;
}

/** Each thread of `pid` (its name and id: Node names few of its threads) and its CPU ms so far, most first. */
export function threadCpuMs(pid: number): Array<{ name: string; ms: number }> {
  const out: Array<{ name: string; ms: number }> = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const s = stat(`/proc/${pid}/task/${t}/stat`);
    if (s) out.push({ name: `${s.comm}/${t === String(pid) ? "main" : t}`, ms: s.ticks * TICK_MS });
  }
  return out.sort((a, b) => b.ms - a.ms);
}

export const cpus = os.cpus().length;
