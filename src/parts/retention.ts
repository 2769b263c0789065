// The retention rule's pass (retention/): one gateway at a time, on the live config's times, with
// the account's admin key for the service's copies where one is configured (a print_driver key may
// not delete), else each user's own key.
import { outboxDir, oldRetentionKeysWarning } from "../config/index.js";
import { Retention } from "../retention/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createRetention(core: Core): { retention: Retention; part: Part } {
  const log = childLog(core.logger, { component: "retention" });
  const warning = oldRetentionKeysWarning(core.config.retention);
  if (warning) log.warn(warning);
  const retention = new Retention({
    store: core.store,
    ledger: core.ledger,
    retention: () => core.live.config().retention,
    clientFor: (user) => core.api.adminClient() ?? core.api.clientFor(user),
    outboxDir: () => outboxDir(core.live.config()),
    clock: core.clock,
    logger: log,
  });
  return {
    retention,
    part: {
      name: "retention",
      start: async () => {
        // SQLite's data-folder lock makes every claim left this gateway's; PostgreSQL's wait for the duty
        if (core.store.backend === "sqlite") await retention.takeBackDeadClaims();
        retention.start();
      },
      stop: () => retention.stop(),
    },
  };
}
