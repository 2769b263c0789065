// The gateway's gauges beyond the default process metrics: the queue by state, text reading's
// backlog, calls waiting in the API gate by caller class, and the users whose key the service
// refused.
import type { KeyHolds } from "../keys/index.js";
import { registerQueueGauges, registerTextGauges } from "../metrics/index.js";
import { textBacklog } from "../store/index.js";
import type { Core } from "./core.js";

export function registerGatewayGauges(core: Core, holds: () => Pick<KeyHolds, "isHeld">): void {
  const { metrics, api, live } = core;
  registerQueueGauges(metrics, core.store);
  registerTextGauges(metrics, () => textBacklog(core.store.sql));
  metrics.gauge(
    "faxgate_api_gate_waiting",
    "API calls waiting in the gate, by caller class (docs/architecture.md)",
    ["class"],
    (g) => {
      for (const [cls, n] of Object.entries(api.gate.waitingCalls())) g.set({ class: cls }, n);
    },
  );
  metrics.gauge(
    "faxgate_key_held",
    "Users whose API key the fax service refused (their faxes are held)",
    ["user"],
    (g) => {
      for (const u of live.users()) g.set({ user: u.name }, holds().isHeld(u.name) ? 1 : 0);
    },
  );
}
