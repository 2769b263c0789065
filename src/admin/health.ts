// What /healthz and /readyz answer. Liveness (/healthz): this process works, its store can be
// written and its data disk has room; a container is restarted when it fails. Readiness
// (/readyz): the fax service answers and every user's key works, the listeners are up and we
// are not shutting down; an outage at the provider is not ours to fix by restarting.
//
// The admin port takes unauthenticated requests, so nothing here costs per request: the store
// probe (one small commit) runs at most once a second and the service check once in 15 s,
// whatever the request rate; concurrent requests share the one check in progress.
import { statfs } from "node:fs/promises";
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import { size } from "../format.js";
import type { FaxApi } from "../fax/index.js";

export interface HealthCheck {
  ok: boolean;
  detail?: string;
}

export interface HealthReport {
  status: "ok" | "failing";
  checks: Record<string, HealthCheck>;
}

export interface HealthDeps {
  /** One small write that proves the store takes commits (e.g. a state row). */
  probeStore: () => void | Promise<void>;
  dataDir: string;
  /** Below this many free bytes on the data disk, liveness fails (a full disk loses mail). */
  minFreeBytes: number;
  clock: Clock;
  /** The users whose keys readiness checks (names only leave this module). */
  users: () => ReadonlyArray<{ name: string }>;
  clientFor: (user: string) => FaxApi;
  /** Listener checks for readiness (smtp, spool), computed by the owner. */
  listeners: () => Record<string, HealthCheck>;
  stopping: () => boolean;
  /** Free bytes on the disk of a folder (injected in tests). */
  freeBytes?: (dir: string) => Promise<number>;
  storeProbeMs?: number;
  serviceProbeMs?: number;
}

interface Cached {
  at: number;
  value: Promise<HealthCheck>;
}

export async function diskFreeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

function report(checks: Record<string, HealthCheck>): HealthReport {
  return { status: Object.values(checks).every((c) => c.ok) ? "ok" : "failing", checks };
}

export class HealthChecks {
  private store: Cached | null = null;
  private disk: Cached | null = null;
  private service: Cached | null = null;

  constructor(private readonly deps: HealthDeps) {}

  /** GET /healthz */
  async liveness(): Promise<HealthReport> {
    const [store, disk] = await Promise.all([this.storeCheck(), this.diskCheck()]);
    return report({ process: { ok: true, detail: `pid ${process.pid}` }, store, disk });
  }

  /** GET /readyz */
  async readiness(): Promise<HealthReport> {
    const checks: Record<string, HealthCheck> = { api: await this.serviceCheck(), ...this.deps.listeners() };
    if (this.deps.stopping()) checks.shutdown = { ok: false, detail: "shutting down" };
    return report(checks);
  }

  private cached(
    slot: "store" | "disk" | "service",
    maxAgeMs: number,
    run: () => Promise<HealthCheck>,
  ): Promise<HealthCheck> {
    const now = this.deps.clock.now();
    const c = this[slot];
    if (c && now - c.at < maxAgeMs) return c.value;
    const value = run().catch((err: unknown) => ({ ok: false, detail: describeError(err) }));
    this[slot] = { at: now, value };
    return value;
  }

  private storeCheck(): Promise<HealthCheck> {
    return this.cached("store", this.deps.storeProbeMs ?? 1000, async () => {
      await this.deps.probeStore();
      return { ok: true };
    });
  }

  private diskCheck(): Promise<HealthCheck> {
    return this.cached("disk", this.deps.storeProbeMs ?? 1000, async () => {
      const free = await (this.deps.freeBytes ?? diskFreeBytes)(this.deps.dataDir);
      const detail = `${size(free)} free on the data disk (${this.deps.dataDir}); at least ${size(this.deps.minFreeBytes)} needed (admin.minFreeMb)`;
      return { ok: free >= this.deps.minFreeBytes, detail };
    });
  }

  /** GET /v1/me with every user's key: the service answers and no key is refused. */
  private serviceCheck(): Promise<HealthCheck> {
    return this.cached("service", this.deps.serviceProbeMs ?? 15_000, async () => {
      const users = this.deps.users();
      if (users.length === 0) return { ok: true, detail: "no users configured" };
      const results = await Promise.all(
        users.map(async (u) => {
          try {
            await this.deps.clientFor(u.name).me();
            return null;
          } catch (err) {
            return `key of ${u.name}: ${describeError(err)}`;
          }
        }),
      );
      const bad = results.filter((r): r is string => r !== null);
      return bad.length === 0
        ? { ok: true, detail: `${users.length} key(s) work` }
        : { ok: false, detail: bad.join("; ") };
    });
  }
}
