// Prometheus metrics (prom-client) in one registry per process, injected into the stages that
// feed them. Gauges that describe the queue are read from the store at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export class Metrics {
  readonly registry = new Registry();

  readonly smtpSessions = new Counter({
    name: "faxgate_smtp_sessions_total",
    help: "SMTP sessions opened",
    registers: [this.registry],
  });
  readonly smtpReplies = new Counter({
    name: "faxgate_smtp_replies_total",
    help: "SMTP replies to MAIL, RCPT and DATA, by code",
    labelNames: ["code"],
    registers: [this.registry],
  });
  readonly senderVerdicts = new Counter({
    name: "faxgate_smtp_sender_verdicts_total",
    help: "Sender checks (smtp.senderAuth) by verdict (pass, fail, temperror) and the check that decided (dmarc, spf+dkim, spf, dkim, arc, from, relay)",
    labelNames: ["verdict", "check"],
    registers: [this.registry],
  });
  readonly spoolFiles = new Counter({
    name: "faxgate_spool_files_total",
    help: "Spool files by outcome (queued, refused, duplicate)",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  readonly backPressure = new Counter({
    name: "faxgate_busy_refusals_total",
    help: "Faxes refused as busy, try again later (queue.maxWaiting reached), by door",
    labelNames: ["door", "why"],
    registers: [this.registry],
  });
  readonly jobsEnqueued = new Counter({
    name: "faxgate_jobs_enqueued_total",
    help: "Jobs durably queued, by source",
    labelNames: ["source"],
    registers: [this.registry],
  });
  readonly sends = new Counter({
    name: "faxgate_sends_total",
    help: "Fax send calls by result (accepted, deferred, failed, unknown)",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: "faxgate_retries_total",
    help: "Recipients deferred for another try, by reason",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly faxResults = new Counter({
    name: "faxgate_fax_results_total",
    help: "Final fax results by state (delivered, failed)",
    labelNames: ["state"],
    registers: [this.registry],
  });
  readonly apiRequests = new Counter({
    name: "faxgate_api_requests_total",
    help: "Fax service API calls by operation and status (or error code)",
    labelNames: ["op", "status"],
    registers: [this.registry],
  });
  readonly apiLatency = new Histogram({
    name: "faxgate_api_request_seconds",
    help: "Fax service API call latency",
    labelNames: ["op"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: "faxgate_notifications_total",
    help: "Notification mails by kind and result (sent, skipped, deferred, failed)",
    labelNames: ["kind", "result"],
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "faxgate_" });
  }

  /** A gauge whose value is computed at scrape time (queue counts, oldest job age). */
  gauge(
    name: string,
    help: string,
    labelNames: string[],
    collect: (g: Gauge<string>) => void | Promise<void>,
  ): Gauge<string> {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      // prom-client awaits a collect that returns a promise (the store is asynchronous)
      collect() {
        return collect(this);
      },
    });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** What an API client reports per call; FaxClient accepts it as an optional hook. */
export type ApiCallObserver = (op: string, status: string, seconds: number) => void;

export function apiObserver(m: Metrics): ApiCallObserver {
  return (op, status, seconds) => {
    m.apiRequests.inc({ op, status });
    m.apiLatency.observe({ op }, seconds);
  };
}
