// 20 concurrent 25 MB messages must not grow the process by anything like 20 x 25 MB: the message
// goes to disk as it arrives and attachments are streamed to their own files. Measured loosely.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { sendBig } from "./big-message.js";
import { DOMAIN, jobIdOf, startRig, stopEmulator, type Rig } from "./harness.js";

let emu: TestEmulator;
let rig: Rig;
beforeAll(async () => {
  emu = await startTestEmulator();
  rig = await startRig(emu);
});
afterAll(async () => {
  await rig?.close();
  await stopEmulator(emu);
});

it("20 concurrent 25 MB messages are queued with far less memory growth than their size", {
  timeout: 180_000,
}, async () => {
  const SIZE = 25_000_000;
  // The parsing thread starts with the first mail; its start is not what is measured here.
  expect(await sendBig(rig.port, `15551230999@${DOMAIN}`, 100_000, 99)).toMatch(/^250 /);
  const before = process.memoryUsage();
  let peakRss = before.rss;
  let peakHeap = before.heapUsed + before.external;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed + m.external);
  }, 25);
  let replies: string[];
  try {
    replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sendBig(rig.port, `1555123${String(1000 + i)}@${DOMAIN}`, SIZE, i)),
    );
  } finally {
    clearInterval(timer);
  }
  for (const r of replies) expect(r).toMatch(/^250 2\.0\.0 queued as /);
  const job = (await rig.store.getJob(jobIdOf(replies[0]!)))!;
  // the mail's short text is typeset as page one (smtp.body: auto); the scan follows it
  expect(job.documents.find((d) => d.name === "scan.pdf")!.bytes).toBeGreaterThan(18_000_000);
  expect(job.original!.bytes).toBeGreaterThan(24_000_000);
  const rssGrowth = peakRss - before.rss;
  const heapGrowth = peakHeap - (before.heapUsed + before.external);
  console.log(
    `20 x 25 MB: peak RSS growth ${(rssGrowth / 1e6).toFixed(0)} MB, peak heap+buffers growth ${(heapGrowth / 1e6).toFixed(0)} MB (the messages total ${((20 * SIZE) / 1e6).toFixed(0)} MB)`,
  );
  // Loose bounds (garbage not yet collected counts too), but half of what buffering would take.
  expect(rssGrowth).toBeLessThan(250_000_000);
  expect(heapGrowth).toBeLessThan(250_000_000);
});
