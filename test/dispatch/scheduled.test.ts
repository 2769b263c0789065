// A fax scheduled for later stays in our queue until due: it does not hold its number's one
// in-flight slot (a later fax to that number goes out now), it can be cancelled, and
// `faxgate jobs`/`job` say why it waits.
import { afterEach, describe, expect, it } from "vitest";
import { clientFor } from "../helpers/client.js";
import { runCli } from "../helpers/cli.js";
import { startTestEmulator } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { waitUntil } from "../helpers/wait.js";
import { EMU_KEY } from "./emulator-facts.js";
import { serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { testDispatcher } from "../helpers/collaborators.js";

let emu: Awaited<ReturnType<typeof startTestEmulator>> | null = null;
let t: TempStore | null = null;
afterEach(async () => {
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

describe("scheduled faxes", () => {
  it("wait in our queue: a later fax to the same number goes first, the scheduled one can be cancelled, jobs says why it waits", async () => {
    emu = await startTestEmulator({ delayMs: 50 });
    t = tempStore();
    const client = clientFor(emu, EMU_KEY);
    const dispatcher = testDispatcher({
      store: t.store,
      clientFor: () => client,
      api: { baseUrl: emu.baseUrl, concurrency: 4, ratePerSecond: 1000 },
      queue: { ...TEST_QUEUE_TIMINGS },
    });
    // an offset time, as a print ticket may give it
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 + 3 * 3_600_000);
    const offset = `${new Date(at.getTime() + 3_600_000).toISOString().slice(0, 19)}+01:00`;
    const later = (
      await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15557770456" }], scheduledAt: offset }))
    ).job;
    const now = (await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15557770456" }] }))).job;
    await waitUntil(
      async () => {
        await dispatcher.runOnce();
        return (await t!.store.getJob(now.id))!.state === "delivered";
      },
      "the unscheduled fax delivered",
      10_000,
      40,
    );
    expect((await t.store.getJob(now.id))!.state).toBe("delivered");
    expect((await t.store.getJob(later.id))!.recipients[0]!.state).toBe("queued");
    const faxes = await serviceFaxes(emu);
    expect(faxes).toHaveLength(1);
    expect(faxes[0]!.cf.faxgateJob).toBe(now.id);

    const config = path.join(t.dir, "faxgate.yaml");
    writeFileSync(config, `api: {baseUrl: sandbox}\ndata: ${path.join(t.dir, "data")}\n`);
    const shown = await runCli(["jobs", "--json", "--config", config]);
    expect(shown.code).toBe(0);
    const listed = (
      JSON.parse(shown.stdout) as Array<{
        id: string;
        scheduledAt: string;
        recipients: Array<{ waiting: string | null }>;
      }>
    ).find((j) => j.id === later.id)!;
    expect(listed.scheduledAt).toBe(at.toISOString());
    expect(listed.recipients[0]!.waiting).toBe(
      `scheduled for ${at.toISOString()} (cancel with \`faxgate cancel ${later.id}\`)`,
    );
    const one = await runCli(["job", later.id, "--config", config]);
    expect(one.stdout).toMatch(/queued .*waiting: scheduled for /);

    const cancelled = await runCli(["cancel", later.id, "--config", config]);
    expect(cancelled.code).toBe(0);
    expect((await t.store.getJob(later.id))!.state).toBe("cancelled");
    await dispatcher.runOnce();
    expect(await serviceFaxes(emu)).toHaveLength(1);
  });
});
