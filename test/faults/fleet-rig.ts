// The fleet suites' setup (fleet, fleet-429): three gateways (three `faxgate start` processes) on
// one database of the file's private PostgreSQL cluster (test/helpers/store-backends.ts,
// usePgCluster), with the emulator set to the account's limits. Written once: the two files had the
// same seventeen lines of it.
import type { Sections } from "../helpers/gateway.js";
import { type Daemon, disposeRig, kill, makeRig, type Rig, secondRig, setBehaviour, startDaemon } from "./harness.js";

export interface Fleet {
  /** The first gateway's rig: its emulator is the service all three call. */
  rig: Rig;
  rigs: Rig[];
  /** The daemon running on each rig (null while a test has one killed). */
  daemons: Array<Daemon | null>;
  /** Stops the daemons (SIGTERM), then the emulator and the folders. */
  dispose(): Promise<void>;
}

/**
 * Three gateways on the database `url`: `config` over the fault suite's sections (the database
 * set), the service's processing delay `delayMs`, the account's limits `account` at the emulator;
 * the daemons started one at a time (three at once on a busy machine can pass the start timeout).
 */
export async function startFleet(
  url: string,
  opts: { delayMs: number; config: Sections; account: Record<string, unknown> },
): Promise<Fleet> {
  const rig = await makeRig({ delayMs: opts.delayMs, config: { ...opts.config, database: url } });
  const daemons: Array<Daemon | null> = [null, null, null];
  const fleet: Fleet = {
    rig,
    rigs: [rig],
    daemons,
    async dispose() {
      for (const d of daemons.slice(1)) if (d) await kill(d, "SIGTERM");
      await disposeRig(rig, daemons[0]);
    },
  };
  try {
    await setBehaviour(rig, opts.account);
    fleet.rigs.push(await secondRig(rig, "gw2"), await secondRig(rig, "gw3"));
    for (let i = 0; i < 3; i++) daemons[i] = await startDaemon(fleet.rigs[i]!);
  } catch (err) {
    await fleet.dispose();
    throw err;
  }
  return fleet;
}
