// Webhooks on against off: API calls per delivered fax, and the time from the service's result to
// the outcome mail. The real Gateway (dispatcher, notifier with an outbox, webhook receiver) in this
// process, the emulator over HTTPS pushing results to the receiver. Not run in CI.
// Alone: node --import tsx bench/webhooks.bench.ts
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { apiFor } from "../test/emulator/api.js";
import { TEST_KEYS } from "../test/helpers/emulator.js";
import { startGateway } from "../test/helpers/gateway.js";
import { TEST_PDF } from "../test/helpers/store.js";
import type { BenchResult } from "./types.js";
import { defaultConfig } from "../test/helpers/collaborators.js";

const FAXES = 40;
/** How long the service takes over each fax. */
const DELAY_MS = 3000;
const PASSWORD = "bench-webhook-password";

interface Run {
  callsPerFax: number;
  /** sends plus the calls made to learn results (history pages, fax info lookups) */
  sendAndStatusPerFax: number;
  /** ms from the fax's resolvedDate to its outcome mail, per fax */
  latencies: number[];
}

/** API calls the gateway made, all of them or only those of the named operations. */
function apiCalls(metricsText: string, ops?: string[]): number {
  let n = 0;
  for (const line of metricsText.split("\n")) {
    if (!line.startsWith("faxgate_api_requests_total{")) continue;
    if (ops && !ops.some((op) => line.includes(`op="${op}"`))) continue;
    n += Number(line.split(" ").pop());
  }
  return n;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function run(webhooks: boolean): Promise<Run> {
  const tg = await startGateway({
    name: "bench-wh",
    emulator: { delayMs: DELAY_MS },
    log: "quiet",
    config: ({ dir }) => ({
      // the schema's history budget (not the test base's), as a gateway with this account has
      api: { concurrency: 8, ratePerSecond: 100, historyPerMinute: undefined },
      notify: {
        from: "faxgate@example.com",
        transport: `outbox:${path.join(dir, "outbox")}`,
        inbound: { enabled: false },
      },
      users: [{ name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice }],
      ...(webhooks
        ? { webhooks: { listen: "127.0.0.1:0", url: "http://127.0.0.1/hook", username: "faxgate", password: PASSWORD } }
        : {}),
    }),
  });
  const { gw, dir } = tg;
  const api = apiFor(tg.emu);
  try {
    if (webhooks) {
      await api.call("POST", "/webhooks", TEST_KEYS.admin, {
        name: "bench",
        url: `${tg.url("webhooks")}/hook`,
        auth: `faxgate:${PASSWORD}`,
        events: { "fax.v1.outbound.complete": true },
      });
    }
    const doc = path.join(dir, "doc.pdf");
    writeFileSync(doc, TEST_PDF);
    const jobs: string[] = [];
    for (let i = 0; i < FAXES; i++) {
      const { job } = await gw.store.enqueue({
        source: "cli",
        user: "alice",
        cover: { enabled: false },
        // ...5: never one of the emulator's special endings (0000-0009)
        recipients: [{ number: `+1555${String(4_000_000 + i * 10 + 5)}` }],
        documents: [{ path: doc, name: "doc.pdf", contentType: "application/pdf" }],
      });
      jobs.push(job.id);
    }
    const started = Date.now();
    for (;;) {
      const sent: string[] = [];
      for (const id of jobs)
        if ((await gw.store.listNotifications({ jobId: id })).some((n) => n.state === "sent" || n.state === "skipped"))
          sent.push(id);
      if (sent.length === FAXES) break;
      if (Date.now() - started > 180_000) throw new Error(`only ${sent.length} of ${FAXES} outcome mails in 3 minutes`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const latencies: number[] = [];
    for (const id of jobs) {
      const job = (await gw.store.getJob(id))!;
      const mail = (await gw.store.listNotifications({ jobId: id })).find((n) => n.sentAt)!;
      const info = (await api.get(`/v1/fax/${job.recipients[0]!.messageId}/info`, TEST_KEYS.admin)).json;
      latencies.push(Date.parse(mail.sentAt!) - Date.parse(info.resolvedDate));
    }
    const delivered = (await gw.store.counts()).recipients.delivered;
    const text = await gw.metrics.text();
    return {
      callsPerFax: apiCalls(text) / delivered,
      sendAndStatusPerFax: apiCalls(text, ["sendFax", "sendFaxToMany", "history", "faxInfo"]) / delivered,
      latencies,
    };
  } finally {
    await api.close();
    await tg.stop();
  }
}

export default async function bench(): Promise<BenchResult[]> {
  const off = await run(false);
  const on = await run(true);
  const polls = defaultConfig().queue.pollInterval / 1000;
  return [
    // the issue's figure: what it costs to send a fax and learn its result
    {
      figure: `API calls per delivered fax, send + status, with webhooks (${FAXES} faxes, service delay ${DELAY_MS / 1000} s)`,
      value: on.sendAndStatusPerFax,
      unit: "calls",
      peer: { label: `polling every ${polls} s`, value: off.sendAndStatusPerFax },
      goal: "<= 2.05",
    },
    // every call, the download of the fax that the outcome mail attaches included
    {
      figure: "API calls per delivered fax, all, with webhooks",
      value: on.callsPerFax,
      unit: "calls",
      peer: { label: "polling", value: off.callsPerFax },
    },
    {
      figure: "result to outcome mail with webhooks, p50",
      value: pct(on.latencies, 50) / 1000,
      unit: "s",
      peer: { label: "polling, p50", value: pct(off.latencies, 50) / 1000 },
      goal: "<= 1",
    },
    {
      figure: "result to outcome mail with webhooks, max",
      value: Math.max(...on.latencies) / 1000,
      unit: "s",
      peer: { label: "polling, max", value: Math.max(...off.latencies) / 1000 },
    },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench())
    process.stdout.write(
      `${r.figure}: ${r.value.toFixed(3)} ${r.unit}${r.peer ? ` (peer ${r.peer.label}: ${r.peer.value.toFixed(3)})` : ""}${r.goal ? ` (goal ${r.goal})` : ""}\n`,
    );
}
