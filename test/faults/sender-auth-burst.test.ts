// The public MX mode under a burst of forgeries: a real daemon (smtp.senderAuth verify) with a
// real DNS server on loopback. A signed, aligned mail is faxed (the emulator receives it); then
// 1,000 refused senders from 250 loopback addresses arrive at once, some with bodies big enough to
// need a work folder, while a real sender keeps sending. Nothing of a refused mail may remain (no
// job, no document, no work file) and the real sender's mail must stay within its usual time.
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitUntil } from "../helpers/wait.js";
import { dkimKey, composeSigned, sendFrom, type Outgoing } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { TEST_USERS } from "../helpers/gateway.js";
import { disposeRig, emulatorFaxes, makeRig, numberFor, SHORT, startDaemon, type Daemon, type Rig } from "./harness.js";

const KEY = dkimKey();
const REFUSED = SHORT ? 300 : 1000;
const ADDRESSES = 250;
const CONCURRENCY = 50;
const REAL_SAMPLES = SHORT ? 15 : 40;
/** first mails from addresses never seen, alone and during the burst */
const NEW_SAMPLES = 5;
const PDF = Buffer.from(
  "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
);

let rig: Rig;
let daemon: Daemon;
let dns: TestDns;
const figures: string[] = [];

beforeAll(async () => {
  dns = await startTestDns({
    "signed.test": ["v=spf1 ip4:127.0.0.2 ip4:127.0.2.0/24 ip4:127.0.3.0/24 -all"],
    "sel._domainkey.signed.test": [KEY.record],
  });
  rig = await makeRig({
    config: {
      // a key of carol's own: one shared with alice is refused by config check
      users: [...TEST_USERS, { name: "carol", email: "carol@signed.test", apiKey: TEST_KEYS.aliceBase }],
      dns: { servers: [dns.server] },
      smtp: {
        maxMessagesPerMinutePerClient: 100000,
        trustedNetworks: ["127.0.0.1/32"],
        senderAuth: { mode: "verify" },
      },
    },
  });
  daemon = await startDaemon(rig);
});
afterAll(async () => {
  if (figures.length) process.stdout.write(`\nsender-auth burst figures:\n  ${figures.join("\n  ")}\n`);
  await disposeRig(rig, daemon);
  await dns?.close();
});

async function jobIds(): Promise<string[]> {
  const store = SqliteStore.open({ dataDir: rig.dataDir });
  try {
    return (await store.listJobs({ limit: 100_000 })).map((j) => j.id);
  } finally {
    store.close();
  }
}

async function jobCount(): Promise<number> {
  return (await jobIds()).length;
}

/** Every file under the data folder but the database's own. */
function dataFiles(dir = rig.dataDir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...dataFiles(p));
    else if (!/\.(db|sqlite)(-wal|-shm|-journal)?$|\.lock$|\.pid$/.test(name)) out.push(path.relative(rig.dataDir, p));
  }
  return out;
}

let real = 0;
const realNumbers: string[] = [];
function realMail(ip = "127.0.0.2"): Outgoing {
  real += 1;
  const number = numberFor(real);
  realNumbers.push(number);
  return {
    from: "carol@signed.test",
    to: `${number.slice(1)}@fax.example.com`,
    ip,
    sign: { domain: "signed.test", key: KEY.privateKey },
    subject: `real ${real}`,
    attachments: [{ filename: "page.pdf", content: PDF }],
  };
}

async function timedReal(ip?: string): Promise<number> {
  const t0 = performance.now();
  const r = await sendFrom(rig.smtpPort, realMail(ip));
  expect(r).toMatch(/^250 /);
  return performance.now() - t0;
}

const p = (xs: number[], q: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;

describe("1,000 refused senders in a burst", () => {
  it("a verified mail is faxed; the burst leaves no job, document or work file, and the real sender is still served (its times reported)", async () => {
    // the usual: the real sender alone (the first also warms the DNS cache)
    const usual: number[] = [];
    for (let i = 0; i < REAL_SAMPLES; i += 1) usual.push(await timedReal());
    // and a first mail from an address never seen before, in a network of the sender's SPF that no
    // forger uses (a hosted mail service sends from many): it waits with the strangers, its
    // network taking turns with the forgers' two
    let fresh = 200;
    const firstUsual: number[] = [];
    for (let i = 0; i < NEW_SAMPLES; i += 1) firstUsual.push(await timedReal(`127.0.3.${fresh++}`));
    const jobsBefore = await jobCount();
    const filesBefore = dataFiles();

    // forgeries of carol's address: half from hosts outside signed.test's SPF (refused at MAIL
    // FROM, the body never sent), half from inside it (a compromised host on the sender's network)
    // unsigned or signed with a key nobody published, refused at DATA once the body is read;
    // every 10th of those carries 400 KB, so that it needs a work folder on disk
    const forged = await composeSigned({
      from: "carol@signed.test",
      to: "15557654321@fax.example.com",
      ip: "",
      sign: { domain: "signed.test", key: dkimKey().privateKey },
    });
    const big = await composeSigned({
      from: "carol@signed.test",
      to: "15557654321@fax.example.com",
      ip: "",
      attachments: [{ filename: "big.pdf", content: Buffer.concat([PDF, Buffer.alloc(400_000, 0x20)]) }],
    });
    const replies = new Map<string, number>();
    let next = 0;
    const during: number[] = [];
    let burstOver = false;
    const worker = async (): Promise<void> => {
      while (next < REFUSED) {
        const i = next++;
        const ip = `127.0.${i % 2 ? 1 : 2}.${(Math.floor(i / 2) % (ADDRESSES / 2)) + 1}`;
        const r = await sendFrom(
          rig.smtpPort,
          { from: "carol@signed.test", to: "15557654321@fax.example.com", ip },
          i % 20 === 0 ? big : forged,
        );
        const code = r.slice(0, 10);
        replies.set(code, (replies.get(code) ?? 0) + 1);
      }
    };
    const t0 = performance.now();
    const burst = Promise.all(Array.from({ length: CONCURRENCY }, worker)).finally(() => {
      burstOver = true;
    });
    const firstDuring: number[] = [];
    const newcomers = (async () => {
      while (!burstOver && firstDuring.length < NEW_SAMPLES) firstDuring.push(await timedReal(`127.0.3.${fresh++}`));
    })();
    while (!burstOver) during.push(await timedReal());
    await burst;
    await newcomers;
    const burstMs = performance.now() - t0;

    figures.push(
      `${REFUSED} forged mails from ${ADDRESSES} addresses, ${CONCURRENCY} at a time, in ${(burstMs / 1000).toFixed(1)} s: ${[...replies].map(([c, n]) => `${n}× ${c}`).join(", ")}`,
    );
    figures.push(
      `a new address's first mail alone: ${firstUsual.map((x) => x.toFixed(0)).join(", ")} ms; during the burst: ${firstDuring.map((x) => x.toFixed(0)).join(", ")} ms`,
    );
    figures.push(
      `real sender alone: p50 ${p(usual, 0.5).toFixed(0)} ms, p99 ${p(usual, 0.99).toFixed(0)} ms (${usual.length} mails); during the burst: p50 ${p(during, 0.5).toFixed(0)} ms, p99 ${p(during, 0.99).toFixed(0)} ms (${during.length} mails)`,
    );

    // every forgery refused for good, none queued: SPF (5.7.23) or DKIM (5.7.20)
    expect(replies.get("550 5.7.23")).toBe(REFUSED / 2);
    expect(replies.get("550 5.7.20")).toBe(REFUSED / 2);
    // nothing left: the jobs are the real sender's only, no new file, no work folder
    expect(await jobCount()).toBe(jobsBefore + during.length + firstDuring.length);
    await waitUntil(
      () => readdirSync(path.join(rig.dataDir, "incoming")).length === 0,
      "the work folders to be removed",
      30_000,
      50,
    );
    // (the real sender's jobs keep their documents, in folders named by their job ids; the outcome
    // mails of its faxes sent meanwhile may still be composing in tmp/notify, which no refused mail
    // reaches: it has no job)
    const ids = new Set(await jobIds());
    const added = dataFiles().filter(
      (f) => !filesBefore.includes(f) && !f.startsWith(`tmp${path.sep}notify${path.sep}`),
    );
    expect(added.filter((f) => !ids.has(f.split(path.sep)[1] ?? ""))).toEqual([]);
    expect(added.length).toBeGreaterThan(0);
    // the real sender is never refused, and its typical mail during the burst takes no longer than
    // its usual worst: the forgers wait for their greeting in the few sessions strangers share
    // (smtp.senderAuth.maxUnverifiedSessions), while the real sender's address, verified before the
    // burst, is greeted at once. A first mail from a new address waits with the strangers, its
    // network taking turns with theirs. The worst mail of each side is one mail of 15 to 40: two
    // samples of one and the same distribution pass each other's worst about half the time, so
    // the worst during the burst (and each new address's first mail) is held to 1.5 times the
    // usual worst, not to the usual worst itself (docs/bench.md has the runs behind this).
    const bound = p(usual, 0.99);
    expect(p(during, 0.5)).toBeLessThanOrEqual(bound);
    expect(p(during, 0.99)).toBeLessThanOrEqual(bound * 1.5);
    expect(firstDuring.length).toBeGreaterThan(0);
    expect(Math.max(...firstDuring)).toBeLessThanOrEqual(bound * 1.5);

    // the verified mails reach the fax service; no forgery does
    await waitUntil(
      async () => ((await emulatorFaxes(rig)).length >= realNumbers.length ? true : null),
      "the real faxes to be sent",
      120_000,
      200,
    );
    const faxes = await emulatorFaxes(rig);
    expect(new Set(faxes.map((f) => f.faxNumber))).toEqual(new Set(realNumbers));
    expect(faxes.some((f) => f.faxNumber === "+15557654321")).toBe(false);
    expect(daemon.child.exitCode).toBeNull();
  });
});
