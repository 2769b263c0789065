// The web console with 10,000 jobs in the store: the list page's API answer (GET /api/jobs, the
// first page of 25, and a search) p50/p99, and the live-update delay: from a change committed to
// the store by something else than the console (as another gateway sharing the queue would) to
// its server-sent event arriving at a client. The real Gateway with its console in this process;
// the jobs are scheduled a month ahead, so the dispatcher leaves them alone. Not run in CI.
// Alone: node --import tsx bench/console-list.bench.ts
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { hashPassword } from "../src/auth/password.js";
import { TEST_KEYS } from "../test/helpers/emulator.js";
import { startGateway } from "../test/helpers/gateway.js";
import type { BenchResult } from "./types.js";

const JOBS = Number(process.env.FAXGATE_BENCH_CONSOLE_JOBS ?? 10_000);
const REQUESTS = 200;
const CHANGES = 20;
const PASSWORD = "bench-console-password";

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

export default async function bench(): Promise<BenchResult[]> {
  const ids: string[] = [];
  const tg = await startGateway({
    name: "bench-web",
    emulator: { delayMs: 1000 },
    log: "quiet",
    config: {
      web: { listen: "127.0.0.1:0" },
      users: [
        { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice, password: await hashPassword(PASSWORD) },
        { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob },
      ],
    },
    // the jobs are queued before the console starts, as a gateway restarted on a long queue
    beforeStart: async (gw) => {
      const later = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const started = Date.now();
      for (let i = 0; i < JOBS; i++) {
        // most of them alice's, as one busy user's list would be; every 10th has a findable subject
        const { job } = await gw.store.enqueue({
          source: "smtp",
          user: i % 5 === 4 ? "bob" : "alice",
          recipients: [
            { number: `+1555010${String(i % 10_000).padStart(4, "0")}`, name: i % 7 === 0 ? `Clinic ${i}` : undefined },
          ],
          documents: [],
          cover: { enabled: true, subject: i % 10 === 0 ? `Invoice ${i}` : `Letter ${i}` },
          scheduledAt: later,
        });
        if (job.user === "alice") ids.push(job.id);
      }
      process.stderr.write(`bench: console: ${JOBS} jobs queued in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    },
  });
  const gw = tg.gw;
  try {
    const base = tg.url("web");
    const login = await request(`${base}/login`, {
      method: "POST",
      body: new URLSearchParams({ user: "alice", password: PASSWORD }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    const cookie = String(login.headers["set-cookie"]).split(";")[0]!;
    await login.body.dump();

    const timeList = async (url: string): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const t = performance.now();
        const r = await request(`${base}${url}`, { headers: { cookie } });
        const body = await r.body.text();
        out.push(performance.now() - t);
        if (r.statusCode !== 200 || body.length < 10) throw new Error(`${url}: ${r.statusCode} ${body.slice(0, 200)}`);
      }
      return out;
    };
    const page = await timeList("/api/jobs?limit=25");
    const search = await timeList("/api/jobs?limit=25&search=invoice");

    // live updates: a client on /api/events; the store changes a job; how long until the event
    const delays: number[] = [];
    const events = await request(`${base}/api/events`, { headers: { cookie } });
    const waiting = new Map<string, (at: number) => void>();
    let buf = "";
    events.body.setEncoding("utf8");
    events.body.on("data", (chunk: string) => {
      const at = performance.now();
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = /^data: (.*)$/m.exec(ev)?.[1];
        if (!data) continue;
        const id = (JSON.parse(data) as { id: string }).id;
        waiting.get(id)?.(at);
      }
    });
    await new Promise((r) => setTimeout(r, 1500)); // the stream's loop is running
    for (let k = 0; k < CHANGES; k++) {
      const id = ids[k * 7]!;
      const seen = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no event for ${id} within 20 s`)), 20_000);
        waiting.set(id, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      });
      // a change comes at any moment, not just after a look (the bench would otherwise lock in step with the loop)
      await new Promise((r) => setTimeout(r, Math.random() * 1000));
      const t = performance.now();
      await gw.store.operate(id, "hold");
      delays.push((await seen) - t);
      waiting.delete(id);
    }
    events.body.destroy();
    const note = `console: ${JOBS} jobs in SQLite, ${REQUESTS} sequential requests each; live delay with web.livePollMs 1000 (the mean wait for the next look is half of it).`;
    return [
      {
        figure: `console list page (GET /api/jobs, 25 of ${JOBS}), p50 / p99`,
        value: Number(pct(page, 50).toFixed(1)),
        unit: `ms (p99 ${pct(page, 99).toFixed(1)} ms)`,
        note,
      },
      {
        figure: `console search (GET /api/jobs?search=invoice), p50 / p99`,
        value: Number(pct(search, 50).toFixed(1)),
        unit: `ms (p99 ${pct(search, 99).toFixed(1)} ms)`,
      },
      {
        figure: "console live update: store change -> SSE event, p50 / p99",
        value: Math.round(pct(delays, 50)),
        unit: `ms (p99 ${Math.round(pct(delays, 99))} ms)`,
        peer: { label: "web.livePollMs", value: 1000 },
      },
    ];
  } finally {
    await tg.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${r.value} ${r.unit}\n`);
}
