// Queue gauges, read from the store when Prometheus scrapes (never on a timer of our own).
import { type QueueStore, JOB_STATES, RECIPIENT_STATES } from "../store/index.js";
import type { Metrics } from "./metrics.js";

export function registerQueueGauges(metrics: Metrics, store: Pick<QueueStore, "counts">): void {
  metrics.gauge("faxgate_jobs", "Jobs by state", ["state"], async (g) => {
    const c = await store.counts();
    for (const s of JOB_STATES) g.set({ state: s }, c.jobs[s] ?? 0);
  });
  metrics.gauge("faxgate_recipients", "Recipients by state", ["state"], async (g) => {
    const c = await store.counts();
    for (const s of RECIPIENT_STATES) g.set({ state: s }, c.recipients[s] ?? 0);
  });
  metrics.gauge("faxgate_queue_oldest_age_seconds", "Age of the oldest job that is not final", [], async (g) => {
    g.set((await store.counts()).oldestActiveAgeSeconds ?? 0);
  });
  metrics.gauge("faxgate_notifications_pending", "Notification mails waiting to be sent", [], async (g) => {
    g.set((await store.counts()).notificationsPending);
  });
}
