// The connector deliveries of received faxes (issue 52): the queue's worker, on every gateway (the
// rows' leases keep two gateways off the same delivery), reading credentials from the live
// config's secrets file.
import { DeliveryQueue } from "../connectors/index.js";
import { dispatcherOwner } from "../dispatch/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createDeliveries(core: Core): { queue: DeliveryQueue; part: Part } {
  const queue = new DeliveryQueue({
    store: core.store,
    ledger: core.ledger,
    secretsFile: () => core.live.config().secretsFile ?? null,
    owner: dispatcherOwner(),
    clock: core.clock,
    logger: childLog(core.logger, { component: "connectors" }),
  });
  return { queue, part: { name: "connectors", start: () => queue.start(), stop: () => queue.stop() } };
}
