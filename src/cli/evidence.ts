// `faxgate evidence <job> --out FILE.zip`, `faxgate evidence verify FILE.zip`, `faxgate evidence key`.
// The bundle is made from the store and the service like the daemon's console makes it, with the
// same key (the data folder's, or evidence.signingKey); verify needs neither config nor network.
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Config } from "../config/schema.js";
import { FaxgateError } from "../errors.js";
import { verifyBundle } from "../evidence/bundle.js";
import { loadSigningKey, newKeyLine } from "../evidence/signing-key.js";
import type { TsaSettings } from "../evidence/timestamp.js";
import type { Ledger } from "../ledger/events.js";
import type { QueueStore } from "../store/queue-store.js";
import {
  type CliContext,
  loadContext,
  needSecret,
  printJson,
  withClients,
  withStore,
  type GlobalOptions,
} from "./context.js";

/** The signing key of this config: evidence.signingKey, else the data folder's (made on first use). */
export async function signingKeyOf(ctx: CliContext) {
  const configured = ctx.config.evidence.signingKey;
  if (configured) needSecret(ctx, configured, "the evidence signing key (evidence.signingKey)");
  return loadSigningKey({ dataDir: ctx.config.data, configured, shared: Boolean(ctx.config.database) });
}

/** evidence.tsa as the evidence maker takes it (the CA file read). */
export async function tsaOf(
  config: Config,
): Promise<(TsaSettings & { whenDown: "refuse" | "without-token" }) | undefined> {
  const t = config.evidence.tsa;
  if (!t) return undefined;
  const ca = t.caFile ? await readFile(t.caFile, "utf8") : undefined;
  return { url: t.url, timeoutMs: t.timeout, whenDown: t.whenDown, ...(ca ? { ca } : {}) };
}

export async function makeCommand(
  id: string,
  opts: GlobalOptions & { out?: string; recipient?: number; withoutTimestamp?: boolean },
  openLedger: (store: QueueStore, ctx: CliContext) => Promise<Ledger> = defaultLedger,
): Promise<void> {
  const out = opts.out;
  if (!out) throw new FaxgateError("USAGE", "give --out FILE.zip: where to write the bundle");
  const ctx = loadContext(opts);
  const { EvidenceMaker } = await import("../evidence/evidence-maker.js");
  const { effectiveUsers } = await import("../keys/key-overrides.js");
  const { smtpSettings } = await import("../config/schema.js");
  const { writeFileAtomic } = await import("../fs/atomic.js");
  const key = await signingKeyOf(ctx);
  const tsa = await tsaOf(ctx.config);
  await withStore(ctx, async (store) => {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job ${id}`);
    const ledger = await openLedger(store, ctx);
    await withClients(ctx, async (clients) => {
      const maker = new EvidenceMaker({
        store,
        clientFor: (user) => clients.forUser(user),
        ledger,
        key: async () => key,
        ...(tsa ? { tsa } : {}),
        users: () => effectiveUsers(ctx.config.users, ctx.config.data),
        defaultCountryCode: () => smtpSettings(ctx.config).defaultCountryCode,
        clock: { now: () => Date.now() },
        scratchDir: path.join(ctx.config.data, "evidence-tmp"),
      });
      const made = await maker.make(job, {
        ...(opts.recipient ? { recipient: opts.recipient } : {}),
        actor: { kind: "operator", id: os.userInfo().username },
        door: "cli",
        withoutTimestamp: Boolean(opts.withoutTimestamp),
      });
      await writeFileAtomic(out, made.zip, 0o600);
      const files = made.manifest.files.length;
      process.stderr.write(
        `evidence of job ${job.id} written to ${out}: ${files} files, manifest sha256 ${made.manifestSha256}, ` +
          `signed by key ${key.fingerprint}${made.timestamped ? ", time-stamped" : tsa ? ", WITHOUT a time-stamp (the authority gave none)" : ""}\n`,
      );
    });
  });
}

export async function verifyCommand(
  file: string,
  opts: { key?: string; tsaCa?: string; json?: boolean },
): Promise<number> {
  const zip = await readFile(file).catch((err: NodeJS.ErrnoException) => {
    throw new FaxgateError("USAGE", `cannot read ${file} (${err.code ?? err.message})`);
  });
  let expectedKey: string | undefined;
  if (opts.key) {
    expectedKey = /^[0-9a-f]{64}$/i.test(opts.key.trim())
      ? opts.key.trim()
      : await readFile(opts.key, "utf8").catch((err: NodeJS.ErrnoException) => {
          throw new FaxgateError("USAGE", `--key: cannot read ${opts.key} (${err.code ?? err.message})`);
        });
  }
  const tsaCa = opts.tsaCa ? [await readFile(opts.tsaCa, "utf8")] : undefined;
  const verdict = await verifyBundle(zip, { ...(expectedKey ? { expectedKey } : {}), ...(tsaCa ? { tsaCa } : {}) });
  if (opts.json) printJson(verdict);
  else {
    const lines = verdict.checks.map((c) => `${c.ok ? "ok    " : "FAILED"}  ${c.what}${c.note ? `: ${c.note}` : ""}`);
    const tail = verdict.ok
      ? `the bundle holds: signed by key ${verdict.fingerprint}${expectedKey ? "" : " (compare with `faxgate evidence key` on the gateway, or pass --key)"}`
      : `the bundle does NOT hold: ${verdict.checks.filter((c) => !c.ok).length} check(s) failed`;
    process.stdout.write(`${lines.join("\n")}\n${tail}\n`);
  }
  return verdict.ok ? 0 : 1;
}

export async function keyCommand(opts: GlobalOptions & { new?: boolean }): Promise<void> {
  if (opts.new) {
    // for the secrets file only: printed once, kept nowhere by this command
    process.stdout.write(`FAXGATE_EVIDENCE_KEY=${newKeyLine()}\n`);
    return;
  }
  const ctx = loadContext(opts);
  const key = await signingKeyOf(ctx);
  if (opts.json) return printJson({ publicKey: key.publicPem, fingerprint: key.fingerprint, algorithm: "Ed25519" });
  process.stdout.write(`${key.publicPem.trimEnd()}\nfingerprint (sha256): ${key.fingerprint}\n`);
}

/**
 * The ledger on this store, as `faxgate audit` opens it: the evidence-made row names no fax number,
 * so no number key is needed (none is made).
 */
async function defaultLedger(store: QueueStore, ctx: CliContext): Promise<Ledger> {
  const { readingLedger } = await import("../parts/ledger.js");
  return readingLedger(ctx.config, store, false);
}
