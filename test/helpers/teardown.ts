// The teardown the dispatch tests share: close the emulator (its clients first, so no keep-alive
// socket holds it open) and remove the test's temp store. Either may be null (a test that failed
// before making it).
import { closeClients } from "./client.js";
import type { TestEmulator } from "./emulator.js";
import type { TempStore } from "./store.js";

export async function disposeEmulatorAndStore(emu: TestEmulator | null, t: TempStore | null): Promise<void> {
  if (emu) {
    await closeClients(emu);
    await emu.stop();
  }
  t?.cleanup();
}
