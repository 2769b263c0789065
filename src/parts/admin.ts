// Health and metrics: liveness (the queue takes a commit, the data disk has room), readiness
// (the listeners, the users' keys), served on admin.listen when configured.
import { HealthChecks, AdminServer } from "../admin/index.js";
import { minFreeMb } from "../config/index.js";
import type { Core } from "./core.js";
import type { HealthCheck, Part } from "./part.js";
import { childLog } from "../log/index.js";

export interface AdminParts {
  health: HealthChecks;
  part: Part;
}

export function createAdmin(
  core: Core,
  opts: { listeners: () => Record<string, HealthCheck>; stopping: () => boolean },
): AdminParts {
  const { config, store, clock, addresses } = core;
  const health = new HealthChecks({
    probeStore: () => store.setState("health:probe", new Date(clock.now()).toISOString()),
    dataDir: config.data,
    minFreeBytes: minFreeMb(config) * 1_048_576,
    clock,
    // a directory person without a key yet has nothing to check (doctor lists them)
    users: () => core.live.users().filter((u) => u.apiKey !== ""),
    clientFor: (user) => core.api.clientFor(user),
    listeners: opts.listeners,
    stopping: opts.stopping,
  });
  const admin = config.admin
    ? new AdminServer({
        listen: config.admin.listen,
        metrics: core.metrics,
        health: () => health.liveness(),
        ready: () => health.readiness(),
        logger: childLog(core.logger, { component: "admin" }),
      })
    : null;
  const part: Part = {
    name: "admin",
    start: async () => {
      if (admin) addresses.admin = await admin.listen();
    },
    stop: () => admin?.close(),
  };
  return { health, part };
}
