// A free loopback port for a server started as its own process (which cannot be told port 0 and
// report back as easily). It is taken below the kernel's ephemeral range: the ports the kernel
// hands out for port 0 are also the local ends it gives outgoing connections, so a daemon that is
// restarted on its port (the crash tests kill and restart one again and again) can find it taken
// by some connection meanwhile. A CI run of test/faults/pg-instances.test.ts failed so, it seems:
// gateway A's restart failed with EADDRINUSE on its port while gateway B and the load kept
// opening connections. Below that range no outgoing connection takes it. Free when asked, and
// never handed out twice by this process, and each test worker picks from a share of its own
// (share() below); a race with a process outside the tests is possible but rare (a random pick
// among some 2,800 ports, checked by listening on it).
import { readFileSync } from "node:fs";
import net from "node:net";

const LOWEST = 10_000;
const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range (32768 unless configured otherwise). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1000 ? low : 32768;
  } catch {
    return 32768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** The kernel's choice (port 0), for when no port below the ephemeral range could be had. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The share of [low, high) this test worker picks from. Each vitest worker (VITEST_POOL_ID, 1 to
 * maxWorkers) has its own, so a port a crash test's daemon leaves free for a moment, between a
 * kill and its restart, cannot be picked by a test of another worker: a fault run failed so, gateway
 * A's restart in pg-instances.test.ts finding its port taken for good while the other files ran.
 */
function share(low: number, high: number): [number, number] {
  const id = Number(process.env.VITEST_POOL_ID);
  if (!Number.isInteger(id) || id < 1) return [low, high];
  const size = Math.floor((high - low) / SHARES);
  const slot = (id - 1) % SHARES;
  return [low + slot * size, low + (slot + 1) * size];
}
const SHARES = 8;

export async function freePort(): Promise<number> {
  const [low, high] = share(LOWEST, ephemeralLow());
  for (let tries = 0; tries < 100; tries++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  return kernelPort();
}
