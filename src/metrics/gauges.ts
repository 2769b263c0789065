// Queue gauges, read from the store when Prometheus scrapes (never on a timer of our own).
import { JOB_STATES, type QueueStore, RECIPIENT_STATES, TEXT_STATES, type TextBacklog } from "../store/index.js";
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

/**
 * Text reading (issue 51) by kind and state, and the wait of the oldest text still to read: how an
 * operator sees OCR falling behind. An alert, not a health check: restarting the gateway or taking
 * it out of service would not read the texts any sooner (docs/inbound.md).
 */
export function registerTextGauges(metrics: Metrics, backlog: () => Promise<TextBacklog>): void {
  // one read per scrape: the first gauge reads, the second (collected after it) takes that read
  let read: Promise<TextBacklog> | null = null;
  metrics.gauge(
    "faxgate_ocr_texts",
    "Fax texts for OCR by kind (received, sent) and state",
    ["kind", "state"],
    async (g) => {
      read = backlog();
      const b = await read;
      for (const kind of ["received", "sent"] as const)
        for (const state of TEXT_STATES) g.set({ kind, state }, b[kind].states[state]);
    },
  );
  metrics.gauge(
    "faxgate_ocr_oldest_waiting_seconds",
    "How long the oldest fax text still to be read (pending, retrying or running) has waited, by kind",
    ["kind"],
    async (g) => {
      const b = await (read ?? backlog());
      read = null;
      for (const kind of ["received", "sent"] as const) g.set({ kind }, b[kind].oldestWaitingSeconds ?? 0);
    },
  );
}
