// The operator's page (`users[].role: admin`): the queue by state with counts and the oldest age;
// held, unknown and stuck faxes; recent refusals; per-user volume; the fax service's reachability,
// the history budget and the users whose key the service refuses.
import type { FastifyPluginAsync } from "fastify";
import type { HealthReport } from "../admin/index.js";
import type { Clock } from "../clock.js";
import { jobJson } from "../job-json.js";
import { listKeyHolds } from "../keys/index.js";
import type { Job } from "../store/index.js";
import type { ConsoleStore } from "./queue-view.js";
import type { RefusalLog } from "./refusals.js";
import { sessionOf } from "./sessions.js";

/** A fax counts as stuck when it is still in flight or waiting this long after its last change. */
export const STUCK_AFTER_MS = 60 * 60_000;

export interface OperatorDeps {
  store: ConsoleStore;
  users: () => ReadonlyArray<{ name: string }>;
  refusals: RefusalLog;
  /** /readyz's report: the service and each key */
  readiness: () => Promise<HealthReport>;
  /** whether the account's history budget has room now (the service's rate limit) */
  historyAvailable: () => boolean;
  /** each user's key expiry from the key watch's last check (absent without api.adminKey) */
  keyExpiry?: () => Array<{ user: string; expiresAt: string | null; checkedAt: string }>;
}

export class OperatorPages {
  constructor(private readonly deps: OperatorDeps) {}

  async overview(nowMs: number) {
    const { store } = this.deps;
    const counts = await store.counts();
    const open = [
      ...(await store.listJobs({ state: "held", limit: 200 })),
      ...(await store.listJobs({ state: "active", limit: 2000 })),
      ...(await store.listJobs({ state: "queued", limit: 2000 })),
    ];
    const show = (j: Job) => jobJson(j, new Map(), nowMs);
    const held = open.filter((j) => j.recipients.some((r) => r.state === "held"));
    const unknown = open.filter((j) => j.recipients.some((r) => r.state === "unknown"));
    const stuck = open.filter(
      (j) =>
        !held.includes(j) &&
        !unknown.includes(j) &&
        nowMs - Date.parse(j.updatedAt) > STUCK_AFTER_MS &&
        !(j.scheduledAt && Date.parse(j.scheduledAt) > nowMs),
    );
    const since = new Date(nowMs - 24 * 3_600_000).toISOString();
    const recent = (await store.listJobs({ limit: 100_000 })).filter((j) => j.createdAt >= since);
    // jobs (faxes) and recipients (numbers) are counted apart; delivered, failed and pages are per number
    type Volume = { user: string; jobs: number; recipients: number; pages: number; delivered: number; failed: number };
    const empty = (user: string): Volume => ({ user, jobs: 0, recipients: 0, pages: 0, delivered: 0, failed: 0 });
    const volume = new Map<string, Volume>();
    for (const u of this.deps.users()) volume.set(u.name, empty(u.name));
    for (const j of recent) {
      const v = volume.get(j.user) ?? empty(j.user);
      v.jobs += 1;
      v.recipients += j.recipients.length;
      for (const r of j.recipients) {
        v.pages += r.pages ?? 0;
        if (r.state === "delivered") v.delivered += 1;
        if (r.state === "failed") v.failed += 1;
      }
      volume.set(j.user, v);
    }
    let service: HealthReport;
    try {
      service = await this.deps.readiness();
    } catch (err) {
      service = { status: "failing", checks: { service: { ok: false, detail: (err as Error).message } } };
    }
    return {
      queue: {
        jobs: counts.jobs,
        recipients: counts.recipients,
        oldestActiveAgeSeconds: counts.oldestActiveAgeSeconds,
        notificationsPending: counts.notificationsPending,
      },
      held: held.map(show),
      unknown: unknown.map(show),
      stuck: stuck.map(show),
      refusals: this.deps.refusals.recent(50),
      volume24h: [...volume.values()].sort((a, b) => b.jobs - a.jobs),
      service: { status: service.status, checks: service.checks, historyBudgetAvailable: this.deps.historyAvailable() },
      keysRefused: await listKeyHolds(
        store,
        this.deps.users().map((u) => u.name),
      ),
      keyExpiry: this.deps.keyExpiry?.() ?? null,
    };
  }
}

/** GET /api/admin/overview: the operator page's data; anyone else gets the 404 of a page not there. */
export const operatorRoutes: FastifyPluginAsync<{ pages?: OperatorPages; clock: Clock }> = async (api, opts) => {
  api.get("/api/admin/overview", async (req, reply) => {
    if (!sessionOf(req).admin || !opts.pages) return reply.code(404).send({ error: "not found" });
    return opts.pages.overview(opts.clock.now());
  });
};
