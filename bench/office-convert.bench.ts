// Office documents, DATA to 250 (issue 54 item 4): the real daemon (built, its own process, as an
// admin runs it) takes mails with a one-page .docx attached, one after another on a new connection
// each, and the time from the DATA command to the 250 that answers the message is measured; nearly
// all of it is the conversion to PDF. Five converters in the same run, each on a fresh daemon:
// - cold (office.warm: false): every document starts a LibreOffice of its own (what there was before);
// - warm, restartAfter 1, with 1, 2 (the default) or 3 kept ready (office.warmPool): a LibreOffice
//   started ahead of need takes each document and a fresh one is started at once
//   (src/intake/office/warm-converter.ts, warm-pool.ts);
// - warm, restartAfter 10 (Gotenberg's default): one LibreOffice takes ten documents.
// "first" is the first document once the daemon (and its warm converter) is ready; "steady" the
// documents after it, each sent as soon as the previous one was answered. Needs soffice.
// Run alone: node --import tsx bench/office-convert.bench.ts (FAXGATE_BENCH_ROUNDS: rounds, default 2)
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { findExecutable } from "../src/fs/executable.js";
import { DOMAIN, SENDER, startBenchDaemon } from "./lib/daemon.js";
import { percentile } from "./lib/load.js";
import type { BenchResult } from "./types.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const DOCX = readFileSync(path.join(here, "..", "test", "fixtures", "office", "hello.docx"));
/** documents per daemon: the first and the steady ones after it */
const DOCUMENTS = 8;
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS) || 2;

/** A warm row: `pool` LibreOffices kept ready, each taking `restartAfter` documents. */
const warm = (label: string, pool: number, restartAfter: number) => ({
  label,
  config: ["office:", "  warm: true", `  warmPool: ${pool}`, `  restartAfter: ${restartAfter}`],
  warm: true,
});
const ALL_MODES = [
  { label: "cold (office.warm: false)", config: ["office:", "  warm: false"], warm: false },
  warm("warm, one LibreOffice, restartAfter 1", 1, 1),
  warm("warm, pool of 2, restartAfter 1 (the default)", 2, 1),
  warm("warm, pool of 3, restartAfter 1", 3, 1),
  warm("warm, one LibreOffice, restartAfter 10", 1, 10),
];
/** FAXGATE_BENCH_OFFICE_MODES=1,2 runs only those rows (indexes into ALL_MODES; the first is cold). */
const MODES = (process.env.FAXGATE_BENCH_OFFICE_MODES ?? "")
  .split(",")
  .filter(Boolean)
  .map((i) => ALL_MODES[Number(i)]!)
  .filter(Boolean);
if (MODES.length === 0) MODES.push(...ALL_MODES);

function message(i: number): string {
  const b64 = DOCX.toString("base64").replace(/.{76}/g, "$&\r\n");
  return [
    `From: ${SENDER}`,
    `To: 15551230${String(100 + i)}@${DOMAIN}`,
    `Subject: office bench ${i}`,
    `Message-ID: <office-bench-${Date.now()}-${i}@example.com>`,
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="b"',
    "",
    "--b",
    "Content-Type: text/plain",
    "",
    `Please fax this, number ${i}.`,
    "--b",
    'Content-Type: application/vnd.openxmlformats-officedocument.wordprocessingml.document; name="hello.docx"',
    'Content-Disposition: attachment; filename="hello.docx"',
    "Content-Transfer-Encoding: base64",
    "",
    b64,
    "--b--",
    "",
  ].join("\r\n");
}

/** Sends one mail on a new connection; the milliseconds from the DATA command to the final reply. */
function sendOne(port: number, i: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, "127.0.0.1");
    let buf = "";
    let step = 0;
    let dataAt = 0;
    const script = [
      () => sock.write("EHLO bench.example.com\r\n"),
      () => sock.write(`MAIL FROM:<${SENDER}>\r\n`),
      () => sock.write(`RCPT TO:<15551230${String(100 + i)}@${DOMAIN}>\r\n`),
      () => {
        dataAt = performance.now();
        sock.write("DATA\r\n");
      },
      () => sock.write(`${message(i)}.\r\n`),
      () => sock.write("QUIT\r\n"),
    ];
    const codes = ["220", "250", "250", "250", "354", "250"];
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => {
      buf += d;
      for (;;) {
        // a reply ends with a line "NNN text" (not "NNN-text")
        const m = /^(\d{3}) .*\r\n/m.exec(buf);
        if (!m) return;
        buf = buf.slice(m.index + m[0].length);
        if (step >= codes.length) return;
        if (m[1] !== codes[step]) {
          sock.destroy();
          return reject(new Error(`mail ${i}: expected ${codes[step]}, got ${m[0].trim()}`));
        }
        if (step === 5) {
          const ms = performance.now() - dataAt;
          script[5]!();
          sock.end();
          return resolve(ms);
        }
        script[step]!();
        step += 1;
      }
    });
    sock.on("error", reject);
  });
}

async function measure(mode: (typeof MODES)[number]): Promise<number[]> {
  const d = await startBenchDaemon({ emuDelayMs: 50, config: [...mode.config] });
  try {
    // three LibreOffices starting at once on two loaded cores can take minutes
    if (mode.warm) await d.out.waitFor(/"msg":"OFFICE warm converter ready"/, 600_000);
    const times: number[] = [];
    for (let i = 0; i < DOCUMENTS; i++) times.push(await sendOne(d.smtpPort, i));
    return times;
  } finally {
    await d.stop();
  }
}

export default async function bench(): Promise<BenchResult[]> {
  if (!findExecutable("soffice")) {
    return [
      {
        figure: ".docx DATA -> 250",
        value: 0,
        unit: "ms",
        note: "office-convert: LibreOffice (soffice) is not installed; the rows need it (apt-get install libreoffice-writer-nogui)",
      },
    ];
  }
  const first = MODES.map(() => [] as number[]);
  const steady = MODES.map(() => [] as number[]);
  // rounds alternate the converters, so that the machine's other work falls on each alike
  for (let r = 0; r < ROUNDS; r++) {
    for (const [m, mode] of MODES.entries()) {
      const t = await measure(mode);
      process.stderr.write(
        `office-convert: round ${r + 1} ${mode.label}: ${t.map((x) => x.toFixed(0)).join(" ")} ms\n`,
      );
      first[m]!.push(t[0]!);
      steady[m]!.push(...t.slice(1));
    }
  }
  const coldAt = MODES.indexOf(ALL_MODES[0]);
  const cold = coldAt < 0 ? null : { p50: percentile(steady[coldAt]!, 50), first: percentile(first[coldAt]!, 50) };
  const rows: BenchResult[] = [];
  for (const [m, mode] of MODES.entries()) {
    const peer = m === coldAt || !cold ? undefined : { label: "cold", value: 0 };
    rows.push(
      {
        figure: `.docx DATA -> 250, first document, p50 of ${first[m]!.length}: ${mode.label}`,
        value: percentile(first[m]!, 50),
        unit: "ms",
        ...(peer && cold ? { peer: { ...peer, value: cold.first } } : {}),
        goal: "<= 1000",
      },
      {
        figure: `.docx DATA -> 250, steady, p50 of ${steady[m]!.length}: ${mode.label}`,
        value: percentile(steady[m]!, 50),
        unit: "ms",
        ...(peer && cold ? { peer: { ...peer, value: cold.p50 } } : {}),
        goal: "<= 1000",
      },
      {
        figure: `.docx DATA -> 250, steady, p99 of ${steady[m]!.length}: ${mode.label}`,
        value: percentile(steady[m]!, 99),
        unit: "ms",
        goal: "<= 2000",
      },
    );
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const r of await bench()) console.log(`${r.figure}: ${r.value.toFixed(0)} ${r.unit}`);
}
