// Waiting in tests: on an event where the code under test emits one (OutputWatch.waitFor, a
// promise), and with this only where the state can be seen but not heard (a folder, a table, the
// emulator's faxes). It looks again every `intervalMs` and fails naming what it waited for.
export interface WaitOptions {
  /** what is awaited, for the failure message */
  what: string;
  timeoutMs?: number;
  intervalMs?: number;
}

export async function waitUntil(cond: () => boolean | Promise<boolean>, opts: WaitOptions): Promise<void> {
  const until = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${opts.what}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}
