// Public MIME test corpora (test/fixtures/mime-corpus, see its SOURCES.md) sent through a real
// daemon's SMTP as they are: every message ends in a job that exists in the store or in a clear
// 4xx/5xx reply, and the daemon neither crashes nor stalls on any of them.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { waitUntil } from "../helpers/wait.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { disposeRig, makeRig, numberFor, startDaemon, type Daemon, type Rig } from "./harness.js";

const CORPUS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/mime-corpus");
const PARALLEL = 4;

function corpusFiles(dir = CORPUS): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...corpusFiles(p));
    else if (name !== "SOURCES.md") out.push(p);
  }
  return out;
}

/** The message as SMTP carries it: CRLF line ends, dot-stuffed, bytes kept as they are. */
function dataOf(file: string): Buffer {
  let s = readFileSync(file).toString("latin1").replace(/\r?\n/g, "\r\n");
  if (!s.endsWith("\r\n")) s += "\r\n";
  return Buffer.from(`${s.replace(/^\./gm, "..")}.\r\n`, "latin1");
}

interface Outcome {
  file: string;
  reply: string;
}

async function send(rig: Rig, file: string, i: number): Promise<Outcome> {
  const { client, banner } = await RawSmtp.connect(rig.smtpPort);
  try {
    expect(banner).toMatch(/^220 /);
    expect(await client.cmd("EHLO corpus.example")).toMatch(/^250/);
    expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250/);
    expect(await client.cmd(`RCPT TO:<${numberFor(500 + i).slice(1)}@fax.example.com>`)).toMatch(/^250/);
    expect(await client.cmd("DATA")).toMatch(/^354/);
    client.write(dataOf(file));
    // a stall shows as a missing reply: reply() throws after the wait
    const reply = await client.reply(120_000);
    await client.cmd("QUIT");
    return { file, reply };
  } finally {
    client.close();
  }
}

describe("public MIME corpora through the daemon", () => {
  let rig: Rig;
  let daemon: Daemon;
  const files = corpusFiles();
  const acceptedIds: string[] = [];

  beforeAll(async () => {
    rig = await makeRig();
    daemon = await startDaemon(rig);
  });
  afterAll(() => disposeRig(rig, daemon));

  it(`has a corpus to send (${files.length} messages)`, () => {
    expect(files.length).toBeGreaterThanOrEqual(50);
  });

  it("every message gets a job or a clear SMTP reply; the daemon stays up and answers", async () => {
    const outcomes: Outcome[] = [];
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const i = next++;
        const o = await send(rig, files[i]!, i);
        outcomes.push(o);
        expect(daemon.child.exitCode, `the daemon died on ${o.file}`).toBeNull();
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));

    const store = SqliteStore.open({ dataDir: rig.dataDir });
    const refused = new Map<string, string[]>();
    let accepted = 0;
    try {
      for (const o of outcomes) {
        const rel = path.relative(CORPUS, o.file);
        if (o.reply.startsWith("250")) {
          const id = /queued as (\S+)/.exec(o.reply)?.[1];
          expect(id, `${rel}: ${o.reply}`).toBeTruthy();
          expect(await store.getJob(id!), `${rel}: job ${id} is not in the store`).not.toBeNull();
          accepted += 1;
        } else {
          // a clear refusal: a 4xx/5xx code, an enhanced status code and words saying why
          expect(o.reply, rel).toMatch(/^[45]\d\d [45]\.\d{1,3}\.\d{1,3} \S.{9,}/);
          const reason = o.reply.replace(/\b[A-Z0-9]{12,}\b/g, "<id>").slice(0, 90);
          refused.set(reason, [...(refused.get(reason) ?? []), rel]);
        }
      }
    } finally {
      store.close();
    }
    const bySource = new Map<string, number>();
    for (const o of outcomes) {
      const src = path.relative(CORPUS, o.file).split(path.sep)[0]!;
      bySource.set(src, (bySource.get(src) ?? 0) + 1);
    }
    process.stdout.write(
      `\nMIME corpus: ${outcomes.length} messages (${[...bySource].map(([s, n]) => `${s} ${n}`).join(", ")}); ${accepted} accepted as jobs, ${outcomes.length - accepted} refused\n` +
        [...refused].map(([reason, list]) => `  ${list.length} x ${reason}\n      ${list.join(", ")}\n`).join(""),
    );
    expect(outcomes).toHaveLength(files.length);
    // most of the corpus is ordinary mail with something to fax
    expect(accepted).toBeGreaterThan(files.length / 2);
    acceptedIds.push(
      ...outcomes.map((o) => /^250 .*queued as (\S+)/.exec(o.reply)?.[1]).filter((id): id is string => !!id),
    );
  });

  it("every accepted message is faxed: its job ends delivered", async () => {
    const ids = [...new Set(acceptedIds)];
    expect(ids.length).toBeGreaterThan(0);
    const states = await waitUntil(
      async () => {
        const store = SqliteStore.open({ dataDir: rig.dataDir });
        try {
          const jobs = await Promise.all(ids.map(async (id) => (await store.getJob(id))!));
          return jobs.every((j) => (FINAL_JOB_STATES as readonly string[]).includes(j.state)) ? jobs : null;
        } finally {
          store.close();
        }
      },
      "every accepted job to be final",
      180_000,
      500,
    );
    const byState = new Map<string, number>();
    for (const j of states) byState.set(j.state, (byState.get(j.state) ?? 0) + 1);
    const bad = states.filter((j) => j.state !== "delivered");
    process.stdout.write(
      `MIME corpus: ${ids.length} jobs final: ${[...byState].map(([s, n]) => `${n} ${s}`).join(", ")}\n` +
        bad
          .map((j) => `  ${j.id} ${j.state}: ${j.recipients.map((r) => r.lastError ?? r.errorInfo ?? "").join("; ")}\n`)
          .join(""),
    );
    expect(bad).toEqual([]);
  });

  it("after the corpus the daemon logged no unhandled error and serves the next session", async () => {
    expect(daemon.out.text).not.toContain("BUG: unhandled");
    expect(daemon.child.exitCode).toBeNull();
    const { client, banner } = await RawSmtp.connect(rig.smtpPort);
    expect(banner).toMatch(/^220 /);
    expect(await client.cmd("NOOP")).toMatch(/^250/);
    client.close();
  });
});
